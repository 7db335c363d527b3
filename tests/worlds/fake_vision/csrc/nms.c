/* A CPU op of the fake torchvision. */
int fake_vision_nms(int n) { return n > 0 ? n - 1 : 0; }
