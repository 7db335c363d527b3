/* Fake op 02: arithmetic the optimizer has to chew on. */
#include <stddef.h>

static double op2_0(double x) { double s = 0; for (int k = 0; k < 3; ++k) s += (x * k + 0) / (k + 1.5); return s; }
static double op2_1(double x) { double s = 0; for (int k = 0; k < 4; ++k) s += (x * k + 1) / (k + 1.5); return s; }
static double op2_2(double x) { double s = 0; for (int k = 0; k < 5; ++k) s += (x * k + 2) / (k + 1.5); return s; }
static double op2_3(double x) { double s = 0; for (int k = 0; k < 6; ++k) s += (x * k + 3) / (k + 1.5); return s; }
static double op2_4(double x) { double s = 0; for (int k = 0; k < 7; ++k) s += (x * k + 4) / (k + 1.5); return s; }
static double op2_5(double x) { double s = 0; for (int k = 0; k < 8; ++k) s += (x * k + 5) / (k + 1.5); return s; }
static double op2_6(double x) { double s = 0; for (int k = 0; k < 9; ++k) s += (x * k + 6) / (k + 1.5); return s; }
static double op2_7(double x) { double s = 0; for (int k = 0; k < 10; ++k) s += (x * k + 7) / (k + 1.5); return s; }
static double op2_8(double x) { double s = 0; for (int k = 0; k < 11; ++k) s += (x * k + 8) / (k + 1.5); return s; }
static double op2_9(double x) { double s = 0; for (int k = 0; k < 12; ++k) s += (x * k + 9) / (k + 1.5); return s; }
static double op2_10(double x) { double s = 0; for (int k = 0; k < 13; ++k) s += (x * k + 10) / (k + 1.5); return s; }
static double op2_11(double x) { double s = 0; for (int k = 0; k < 14; ++k) s += (x * k + 11) / (k + 1.5); return s; }
static double op2_12(double x) { double s = 0; for (int k = 0; k < 15; ++k) s += (x * k + 12) / (k + 1.5); return s; }
static double op2_13(double x) { double s = 0; for (int k = 0; k < 16; ++k) s += (x * k + 13) / (k + 1.5); return s; }
static double op2_14(double x) { double s = 0; for (int k = 0; k < 17; ++k) s += (x * k + 14) / (k + 1.5); return s; }
static double op2_15(double x) { double s = 0; for (int k = 0; k < 18; ++k) s += (x * k + 15) / (k + 1.5); return s; }
static double op2_16(double x) { double s = 0; for (int k = 0; k < 19; ++k) s += (x * k + 16) / (k + 1.5); return s; }
static double op2_17(double x) { double s = 0; for (int k = 0; k < 20; ++k) s += (x * k + 17) / (k + 1.5); return s; }
static double op2_18(double x) { double s = 0; for (int k = 0; k < 21; ++k) s += (x * k + 18) / (k + 1.5); return s; }
static double op2_19(double x) { double s = 0; for (int k = 0; k < 22; ++k) s += (x * k + 19) / (k + 1.5); return s; }
static double op2_20(double x) { double s = 0; for (int k = 0; k < 23; ++k) s += (x * k + 20) / (k + 1.5); return s; }
static double op2_21(double x) { double s = 0; for (int k = 0; k < 24; ++k) s += (x * k + 21) / (k + 1.5); return s; }
static double op2_22(double x) { double s = 0; for (int k = 0; k < 25; ++k) s += (x * k + 22) / (k + 1.5); return s; }
static double op2_23(double x) { double s = 0; for (int k = 0; k < 26; ++k) s += (x * k + 23) / (k + 1.5); return s; }
static double op2_24(double x) { double s = 0; for (int k = 0; k < 27; ++k) s += (x * k + 24) / (k + 1.5); return s; }
static double op2_25(double x) { double s = 0; for (int k = 0; k < 28; ++k) s += (x * k + 25) / (k + 1.5); return s; }
static double op2_26(double x) { double s = 0; for (int k = 0; k < 29; ++k) s += (x * k + 26) / (k + 1.5); return s; }
static double op2_27(double x) { double s = 0; for (int k = 0; k < 30; ++k) s += (x * k + 27) / (k + 1.5); return s; }
static double op2_28(double x) { double s = 0; for (int k = 0; k < 31; ++k) s += (x * k + 28) / (k + 1.5); return s; }
static double op2_29(double x) { double s = 0; for (int k = 0; k < 32; ++k) s += (x * k + 29) / (k + 1.5); return s; }
static double op2_30(double x) { double s = 0; for (int k = 0; k < 33; ++k) s += (x * k + 30) / (k + 1.5); return s; }
static double op2_31(double x) { double s = 0; for (int k = 0; k < 34; ++k) s += (x * k + 31) / (k + 1.5); return s; }
static double op2_32(double x) { double s = 0; for (int k = 0; k < 35; ++k) s += (x * k + 32) / (k + 1.5); return s; }
static double op2_33(double x) { double s = 0; for (int k = 0; k < 36; ++k) s += (x * k + 33) / (k + 1.5); return s; }
static double op2_34(double x) { double s = 0; for (int k = 0; k < 37; ++k) s += (x * k + 34) / (k + 1.5); return s; }
static double op2_35(double x) { double s = 0; for (int k = 0; k < 38; ++k) s += (x * k + 35) / (k + 1.5); return s; }
static double op2_36(double x) { double s = 0; for (int k = 0; k < 39; ++k) s += (x * k + 36) / (k + 1.5); return s; }
static double op2_37(double x) { double s = 0; for (int k = 0; k < 40; ++k) s += (x * k + 37) / (k + 1.5); return s; }
static double op2_38(double x) { double s = 0; for (int k = 0; k < 41; ++k) s += (x * k + 38) / (k + 1.5); return s; }
static double op2_39(double x) { double s = 0; for (int k = 0; k < 42; ++k) s += (x * k + 39) / (k + 1.5); return s; }
int fake_torch_op_02(int n) {
  double acc = 0;
  acc += op2_0((double)n + 0);
  acc += op2_1((double)n + 1);
  acc += op2_2((double)n + 2);
  acc += op2_3((double)n + 3);
  acc += op2_4((double)n + 4);
  acc += op2_5((double)n + 5);
  acc += op2_6((double)n + 6);
  acc += op2_7((double)n + 7);
  acc += op2_8((double)n + 8);
  acc += op2_9((double)n + 9);
  acc += op2_10((double)n + 10);
  acc += op2_11((double)n + 11);
  acc += op2_12((double)n + 12);
  acc += op2_13((double)n + 13);
  acc += op2_14((double)n + 14);
  acc += op2_15((double)n + 15);
  acc += op2_16((double)n + 16);
  acc += op2_17((double)n + 17);
  acc += op2_18((double)n + 18);
  acc += op2_19((double)n + 19);
  acc += op2_20((double)n + 20);
  acc += op2_21((double)n + 21);
  acc += op2_22((double)n + 22);
  acc += op2_23((double)n + 23);
  acc += op2_24((double)n + 24);
  acc += op2_25((double)n + 25);
  acc += op2_26((double)n + 26);
  acc += op2_27((double)n + 27);
  acc += op2_28((double)n + 28);
  acc += op2_29((double)n + 29);
  acc += op2_30((double)n + 30);
  acc += op2_31((double)n + 31);
  acc += op2_32((double)n + 32);
  acc += op2_33((double)n + 33);
  acc += op2_34((double)n + 34);
  acc += op2_35((double)n + 35);
  acc += op2_36((double)n + 36);
  acc += op2_37((double)n + 37);
  acc += op2_38((double)n + 38);
  acc += op2_39((double)n + 39);
  return (int)acc;
}
