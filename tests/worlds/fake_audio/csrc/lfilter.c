/* A CPU op of the fake torchaudio (the _torchaudio extension). */
int fake_audio_lfilter(int n) { return n > 1 ? n / 2 : 0; }
