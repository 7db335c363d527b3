// CUDA op of the fake torchaudio's libtorchaudio, compiled for each arch of TORCH_CUDA_ARCH_LIST.
__global__ void fake_rnnt_kernel(const float *logits, float *grads, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) grads[i] = logits[i] * 0.5f;
}

extern "C" int fake_audio_rnnt_cuda(const float *logits, float *grads, int n) {
  fake_rnnt_kernel<<<(n + 127) / 128, 128>>>(logits, grads, n);
  return 0;
}
