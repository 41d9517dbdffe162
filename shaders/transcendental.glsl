// dmlpy's own transcendental functions, the same bits on every device: built only from
// `precise` FP32 additions and multiplications, exact integer bit operations and
// comparisons, never from a driver's exp/log/tanh (the Vulkan spec lets those be off by
// 3 + 2·|x| ULP, and every vendor rounds differently). Included where an operator's
// expression uses one (USES_TRANSCENDENTALS).
//
// Accuracy (tests/test_transcendentals.py measures it against float64 over dense sweeps):
// within 2 ULP of the correctly rounded result in FP32 for exp, expm1, log1p, sigmoid
// and tanh; NaN in gives NaN out; no overflow where the result is finite.

const float LOG2E = 1.44269502162933349609375;
const float LN2_HI = 0.693145751953125;          // 15 significant bits: k * LN2_HI is exact for |k| <= 512
const float LN2_LO = 1.428606765330187e-06;     // ln 2 - LN2_HI, rounded
const float EXP_OVERFLOW = 88.72283172607421875;  // the largest x with exp(x) <= FLT_MAX
const float EXP_UNDERFLOW = -103.972084045410156;  // below it exp(x) < 2^-150 rounds to 0

// value * 2^k for value in [0.5, 2), rounded once (to a subnormal too) in integers. Every
// case is computed and one selected, here and in dml_exp and dml_log: lavapipe runs each
// lane through every branch of an if anyway, and early returns add masked stores.
float dml_ldexp(float value, int k) {
    uint bits = floatBitsToUint(value);
    int exponent = int((bits >> 23) & 0xFFu) + k;
    // A subnormal result: shift bits dropped, rounded to nearest even (26 or more: zero).
    uint shift = uint(clamp(1 - exponent, 1, 26));
    uint significand = (bits & 0x7FFFFFu) | 0x800000u;
    uint kept = significand >> shift;
    uint rest = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    kept += rest > halfway || (rest == halfway && (kept & 1u) == 1u) ? 1u : 0u;
    uint magnitude = exponent >= 255 ? 0x7F800000u : exponent >= 1 ? (bits & 0x7FFFFFu) | (uint(exponent) << 23) : kept;
    return uintBitsToFloat((bits & 0x80000000u) | magnitude);
}

// value * 2^k where value and the result are normal (or the result overflows), |k| <= 250:
// two multiplications by normal powers of two, each exact, so there is nothing to round.
// Where the result may be subnormal dml_ldexp rounds it (a device may flush the product).
float dml_scaled(float value, int k) {
    int first = k / 2;
    precise float half_way = value * uintBitsToFloat(uint(127 + first) << 23);
    precise float scaled = half_way * uintBitsToFloat(uint(127 + k - first) << 23);
    return scaled;
}

// 1 / d for a positive normal d whose reciprocal is normal, from multiplications and
// additions alone (the same bits everywhere): a guess from the bits, within 5.1%, and
// `steps` Newton steps (within 0.26%, 6.8e-6, then 1.5e-7: FP32's own rounding).
float dml_reciprocal_estimate(float d, int steps) {
    precise float r = uintBitsToFloat(0x7EF311C3u - floatBitsToUint(d));
    for (int k = 0; k < steps; ++k) r = r * (2.0 - d * r);
    return r;
}

// n / d within 3 ULP, for a normal d and a normal quotient: the first value of a quotient
// whose exact residual is carried (Dekker's product) need not be correctly rounded, and
// this costs a fraction of dml_div.
float dml_quotient_estimate(float n, float d) {
    precise float quotient = n * dml_reciprocal_estimate(d, 3);
    return quotient;
}

// e^r - 1 for |r| <= ln(2)/2 + a little: Taylor to r^9 (the first term left out is below
// 2^-30 relative), evaluated so that the small correction carries the rounding.
float dml_expm1_reduced(float r) {
    precise float tail = 2.4801587301587302e-05 + r * 2.7557319223985893e-06;
    tail = 1.9841269841269841e-04 + r * tail;
    tail = 1.3888888888888889e-03 + r * tail;
    tail = 8.3333333333333333e-03 + r * tail;
    tail = 4.1666666666666667e-02 + r * tail;
    tail = 1.6666666666666667e-01 + r * tail;
    tail = 0.5 + r * tail;
    precise float correction = (r * r) * tail;
    precise float result = r + correction;
    return result;
}

// x = k ln 2 + r with |r| <= ln(2)/2 (Cody and Waite: both products exact or tiny).
int dml_reduce(float x, out float r) {
    precise float scaled = x * LOG2E;
    float k = roundEven(scaled);
    precise float high = x - k * LN2_HI;
    precise float reduced = high - k * LN2_LO;
    r = reduced;
    return int(k);
}

float dml_exp(float x) {
    float r;
    int k = dml_reduce(dml_isnan(x) ? 0.0 : clamp(x, EXP_UNDERFLOW, EXP_OVERFLOW), r);
    precise float value = 1.0 + dml_expm1_reduced(r);
    // value in [0.7, 1.5): 2^k value is normal from k = -125 up to the largest finite result
    // (k = 128 has value < 1), its exponent moved in integers, exactly
    float scaled = uintBitsToFloat(floatBitsToUint(value) + (uint(max(k, -125)) << 23));
    // below, 2^-125 value times 2^(k + 125), rounded once into the subnormals by dml_mul (the
    // hardware's multiplication where the device keeps them, exact integers where it may not)
    if (k < -125) scaled = dml_mul(scaled, uintBitsToFloat(uint(k + 252) << 23));
    float result = x > EXP_OVERFLOW ? uintBitsToFloat(0x7F800000u) : x < EXP_UNDERFLOW ? 0.0 : scaled;
    return dml_isnan(x) ? x : result;
}

float dml_expm1(float x) {
    float r;
    int k = dml_reduce(dml_isnan(x) ? 0.0 : clamp(x, -18.0, EXP_OVERFLOW), r);
    float q = dml_expm1_reduced(r);
    // 2^k q + (2^k - 1), both terms exact, rounded once (k = 0, |x| <= ln(2)/2: r = x, q itself).
    // Above k = 24, 2^k - 1 rounds to 2^k, and the sum to what 2^k (q + 1) rounds to. k = 128
    // (x just below the overflow) takes 2^127 and an exact doubling: rounding a sum and scaling
    // it by a power of two commute while both stay normal.
    float power = uintBitsToFloat(uint(127 + min(k, 127)) << 23);
    precise float scaled = q * power;
    precise float sum = scaled + (k <= 24 ? power - 1.0 : power);
    precise float result = k == 128 ? sum * 2.0 : sum;  // normal, or an overflow
    result = dml_abs(x) < 9.3132257461547852e-10 ? x : result;  // x (1 + x/2 ...) rounds to x; x may be subnormal
    result = x < -17.5 ? -1.0 : result;  // e^x < 2^-25: -1 + e^x rounds to -1
    result = x > EXP_OVERFLOW ? uintBitsToFloat(0x7F800000u) : result;
    return dml_isnan(x) ? x : result;
}

const float SQRT2 = 1.41421353816986083984375;  // sqrt(2) rounded down

// log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: f + f^2 Q(f), Q of degree 8 fitted to
// (log(1 + f) - f) / f^2 (relative error under 2^-23.8, its coefficients in FP32). f is exact and
// f^2 Q at most a fifth of the result, so only the last addition's rounding counts: LOG
// within 0.94 ULP, with no division (docs/numerics.md).
float dml_log_near_one(float f) {
    precise float q = 0.12776850163936615 + f * -0.07777025550603867;
    q = -0.13114190101623535 + f * q;
    q = 0.14196224510669708 + f * q;
    q = -0.16627086699008942 + f * q;
    q = 0.2000163197517395 + f * q;
    q = -0.2500077784061432 + f * q;
    q = 0.33333325386047363 + f * q;
    q = -0.4999999701976776 + f * q;
    precise float result = f + (f * f) * q;
    return result;
}

// log x = k ln 2 + log(1 + f) with x = 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)]; subnormal
// x is normalised in integers.
float dml_log(float x) {
    uint bits = floatBitsToUint(x);
    int k;
    uint significand = dml_significand(bits & 0x7FFFFFFFu, k);
    float m = uintBitsToFloat((significand & 0x7FFFFFu) | 0x3F800000u);  // in [1, 2)
    bool above = m > SQRT2;
    m = above ? m * 0.5 : m;
    k += above ? 1 : 0;
    precise float f = m - 1.0;  // exact
    float kf = float(k);
    precise float low = dml_log_near_one(f) + kf * LN2_LO;
    precise float result = kf * LN2_HI + low;
    // The special inputs, the later rules first so that the earlier ones win.
    uint result_bits = (bits >> 31) != 0u ? 0x7FC00000u : floatBitsToUint(result);
    result_bits = (bits & 0x7FFFFFFFu) == 0u ? 0xFF800000u : result_bits;
    return dml_isnan(x) || bits == 0x7F800000u ? x : uintBitsToFloat(result_bits);
}

// e^(a - b), with the rounding error of a - b carried (a softmax's e^(x - max): a
// difference of 80 rounded to FP32 is off by up to 2^-18, which e^ turns into 80 ULP).
float dml_exp_diff(float a, float b) {
    precise float d = a - b;
    float r = dml_exp(d);
    uint magnitude = floatBitsToUint(r) & 0x7FFFFFFFu;
    precise float b_part = d - a;  // Knuth's two-sum of a and -b: err is exactly a - b - d
    precise float a_part = d - b_part;
    precise float err = (a - a_part) - (b + b_part);
    float corrected = dml_add(r, dml_mul(r, err));  // r may be subnormal
    return dml_isnan(d) || magnitude == 0u || magnitude == 0x7F800000u ? r : corrected;
}

// log(1 + t) for t in [0, 1] (what softplus needs): u = 1 + t rounded, the rounding error
// carried separately, log u = m ln 2 + log(1 + f) with u = 2^m (1 + f).
float dml_log1p_unit(float t) {
    precise float u = 1.0 + t;
    precise float lost = t - (u - 1.0);  // exact: what rounding 1 + t dropped
    bool halve = u > SQRT2;
    precise float f = (halve ? u * 0.5 : u) - 1.0;  // exact
    // lost / u is far below an ULP of the result: an estimate of the quotient serves
    precise float with_lost = dml_log_near_one(f) + dml_quotient_estimate(lost, u);
    precise float result = halve ? (LN2_HI + with_lost) + LN2_LO : with_lost;
    return u == 1.0 ? t : result;  // t < 2^-24: log1p(t) = t to within half an ULP
}

// log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
float dml_softplus(float x) {
    float value = dml_add(max(x, 0.0), dml_log1p_unit(dml_exp(-abs(x))));
    return dml_isnan(x) ? x : value;
}

// a + b = sum + error exactly (Knuth's two-sum: no order of magnitudes assumed).
float dml_two_sum(float a, float b, out float error) {
    precise float sum = a + b;
    precise float b_part = sum - a;
    precise float a_part = sum - b_part;
    precise float lost = (a - a_part) + (b - b_part);
    error = lost;
    return sum;
}

// a b = product + error exactly (Dekker's product from 12-bit halves, where nothing over- or
// underflows). Each operand is split on its bits: the high half keeps the leading 12 bits of
// its significand, the low half (exact) the other 12, so every partial product is exact.
float dml_two_product(float a, float b, out float error) {
    float a_high = uintBitsToFloat(floatBitsToUint(a) & 0xFFFFF000u);
    precise float a_low = a - a_high;
    float b_high = uintBitsToFloat(floatBitsToUint(b) & 0xFFFFF000u);
    precise float b_low = b - b_high;
    precise float product = a * b;
    precise float rest = (((a_high * b_high - product) + a_high * b_low) + a_low * b_high) + a_low * b_low;
    error = rest;
    return product;
}

// 1 / (1 + e) for x >= 0, e / (1 + e) below, with e = e^-|x| as softplus and sigmoid' form
// it: where an expression uses several of them, the compiler computes it once.
float dml_sigmoid(float x) {
    float e = dml_exp(-abs(x));
    precise float denominator = 1.0 + e;
    float numerator = x >= 0.0 ? 1.0 : e;
    float quotient = dml_quotient_estimate(numerator, denominator);
    // The rounding of 1 + e and of the quotient, corrected to first order: the exact
    // numerator / (denominator + denominator_error) is quotient + residual / denominator,
    // where 1 / denominator is quotient (x >= 0) or 1 - quotient (x < 0).
    precise float denominator_error = e - (denominator - 1.0);  // exact: 1 >= e
    float product_error;
    float product = dml_two_product(quotient, denominator, product_error);
    precise float residual = ((numerator - product) - product_error) - quotient * denominator_error;
    precise float result = quotient + residual * (x >= 0.0 ? quotient : 1.0 - quotient);
    // Below 1e-30 Dekker's product would underflow; there e < 2^-24, the denominator is 1
    // and the quotient the numerator, exactly (subnormal too).
    return dml_isnan(x) ? x : quotient < 1.0e-30 ? numerator : result;
}

// tanh |x| = -expm1(-2|x|) / (expm1(-2|x|) + 2): accurate near 0 (no 1 - ... cancels) and
// far from it (the denominator nears 1), so one branch-free formula serves every x; the
// sign restored at the end.
float dml_tanh(float x) {
    float a = dml_abs(x);
    float t = dml_expm1(-(a + a));
    precise float denominator = t + 2.0;
    float quotient = dml_quotient_estimate(-t, denominator);
    // The rounding of t + 2 and of the quotient, corrected to first order as in dml_sigmoid;
    // here 1 / denominator is (1 + quotient) / 2.
    precise float denominator_error = t - (denominator - 2.0);  // exact: 2 >= |t|
    float product_error;
    float product = dml_two_product(quotient, denominator, product_error);
    precise float residual = ((-t - product) - product_error) - quotient * denominator_error;
    precise float corrected = quotient + residual * ((1.0 + quotient) * 0.5);
    float magnitude = quotient >= 1.0e-30 ? corrected : quotient;  // else Dekker's product would underflow
    magnitude = a < 9.3132257461547852e-10 ? a : magnitude;  // |x| (1 - x^2/3 ...) rounds to |x|; may be subnormal
    // The sign of x, on bits: tanh(±0) is ±0 whatever sign the zero quotient took.
    uint bits = (floatBitsToUint(magnitude) & 0x7FFFFFFFu) | (floatBitsToUint(x) & 0x80000000u);
    return dml_isnan(x) ? x : uintBitsToFloat(bits);
}

// numerator / (1 + e)^2 for 0 <= e <= 1, with the roundings of 1 + e, of its square and of
// the quotient corrected to first order (as in dml_sigmoid): within half a ULP of the
// value for the e given.
float dml_over_square_of_one_plus(float numerator, float e) {
    precise float one_plus = 1.0 + e;
    float square_error;
    float square = dml_two_product(one_plus, one_plus, square_error);
    float quotient = dml_quotient_estimate(numerator, square);
    precise float one_plus_error = e - (one_plus - 1.0);  // exact: 1 >= e
    // (1 + e)^2 = square + square_error + 2 one_plus one_plus_error, to first order
    precise float denominator_error = square_error + 2.0 * (one_plus * one_plus_error);
    float product_error;
    float product = dml_two_product(quotient, square, product_error);
    precise float residual = ((numerator - product) - product_error) - quotient * denominator_error;
    // 1 / one_plus to a few bits is all the correction needs: one Newton step from a line
    precise float guess = 1.5 - 0.5 * one_plus;
    precise float inverse = guess * (2.0 - one_plus * guess);
    precise float result = quotient + residual * (inverse * inverse);
    // Below 1e-30 Dekker's product would underflow; there the square is 1, exactly.
    return quotient < 1.0e-30 ? numerator : result;
}

// sigmoid'(x) = e / (1 + e)^2 with e = e^-|x|: no cancellation (s (1 - s) loses everything
// once s rounds to 1).
float dml_sigmoid_slope(float x) {
    float e = dml_exp(-abs(x));
    float slope = dml_over_square_of_one_plus(e, e);
    return dml_isnan(x) ? x : slope;
}

// tanh'(x) = 1 - tanh^2 x = 4 e / (1 + e)^2 with e = e^-2|x|, for the same reason.
float dml_tanh_slope(float x) {
    float a = abs(x);
    float e = dml_exp(-(a + a));
    float slope = dml_over_square_of_one_plus(dml_mul(4.0, e), e);  // e may be subnormal
    return dml_isnan(x) ? x : slope;
}

// GELU(x) = x Φ(x) with Φ(x) = (1 + erf(x/√2)) / 2, and its slope Φ(x) + x φ(x). Never
// as 1 + erf(...): that cancels for x < 0 (GELU(-10) is about -7.6e-23, not 0). For
// |x| <= 0.75 both are Taylor series in x²; beyond, they come from the Gaussian tail
// t Φ(-t) = e^(-t²/2) g(t) (t = |x|), g fitted piecewise, with GELU(x) - GELU(-x) = x and
// GELU'(x) + GELU'(-x) = 1 giving the positive side.
// Generated by tools/fit_gauss_tail.py.
// |x| <= 0.75: GELU(x) = x/2 + x^2 P(x^2), GELU'(x) = 1/2 + x Q(x^2) (erf's Taylor series)
float dml_gelu_series(float z) {
    precise float acc = -4.122667363049004e-08;
    acc = 6.659693667643296e-07 + z * acc;
    acc = -9.44465591601329e-06 + z * acc;
    acc = 0.00011543469008756801 + z * acc;
    acc = -0.0011873282492160797 + z * acc;
    acc = 0.009973556734621525 + z * acc;
    acc = -0.06649038195610046 + z * acc;
    precise float result = 0.3989422917366028 + (-1.1335170135851058e-08 + z * acc);
    return result;
}
float dml_gelu_slope_series(float z) {
    precise float acc = 4.092353833584639e-08;
    acc = -6.596267780878406e-07 + z * acc;
    acc = 9.323571248387452e-06 + z * acc;
    acc = -0.00011333587463013828 + z * acc;
    acc = 0.0011543468572199345 + z * acc;
    acc = -0.009498625993728638 + z * acc;
    acc = 0.0598413422703743 + z * acc;
    acc = -0.26596152782440186 + z * acc;
    precise float result = 0.7978845834732056 + (-2.2670340271702116e-08 + z * acc);
    return result;
}
// t in [0.75, 2.5): in t - 1.625; fit within 0.0013 x 2^-24
const float TAIL0_CENTRE = 1.625;
float dml_gauss_tail0(float z) {
    precise float acc = 8.834080063024885e-07;
    acc = -3.526519321894739e-06 + z * acc;
    acc = 1.1958080904150847e-05 + z * acc;
    acc = -4.5071403292240575e-05 + z * acc;
    acc = 0.0001625970908207819 + z * acc;
    acc = -0.0005494780489243567 + z * acc;
    acc = 0.0017401992809027433 + z * acc;
    acc = -0.005103119648993015 + z * acc;
    acc = 0.013594979420304298 + z * acc;
    acc = -0.03187832608819008 + z * acc;
    acc = 0.06172480434179306 + z * acc;
    precise float result = 0.31691256165504456 + (-8.017249086833544e-09 + z * acc);
    return result;
}
// t in [2.5, 5.0): in t - 3.75; fit within 0.0233 x 2^-24
const float TAIL1_CENTRE = 3.75;
float dml_gauss_tail1(float z) {
    precise float acc = 1.312682798015885e-07;
    acc = -6.613534537791566e-07 + z * acc;
    acc = 2.7659532406687504e-06 + z * acc;
    acc = -1.3045163541391958e-05 + z * acc;
    acc = 5.915416477364488e-05 + z * acc;
    acc = -0.0002507231547497213 + z * acc;
    acc = 0.000988468062132597 + z * acc;
    acc = -0.0035320231691002846 + z * acc;
    acc = 0.010807043872773647 + z * acc;
    precise float result = 0.3751470446586609 + (-8.977533383358605e-09 + z * acc);
    return result;
}
// t in [5.0, 15.0): in 1/t - 0.13333333333333333; fit within 0.0023 x 2^-24
const float TAIL2_CENTRE = 0.13333334028720856;
float dml_gauss_tail2(float z) {
    precise float acc = 3.892975091934204;
    acc = 1.8124425411224365 + z * acc;
    acc = -1.680757761001587 + z * acc;
    acc = 0.22358094155788422 + z * acc;
    acc = 0.4284116327762604 + z * acc;
    acc = -0.2943841516971588 + z * acc;
    acc = -0.09633976966142654 + z * acc;
    precise float result = 0.39219823479652405 + (-6.357765869324794e-09 + z * acc);
    return result;
}

const float INV_SQRT_2PI = 0.3989422917366028;
const float GAUSS_TAIL_END = 15.0;  // t Φ(-t) < 2^-150 beyond: GELU(-t) rounds to -0

// a b - fl(a b), exactly, for products and factors of magnitude 1e-30 to 1e30 (else 0, where
// there is nothing worth carrying, and Dekker's partial products could over- or underflow).
float dml_product_error(float a, float b) {
    precise float product = a * b;
    if (!(abs(a) < 1.0e30 && abs(b) < 1.0e30 && abs(product) < 1.0e30 && abs(product) > 1.0e-30)) return 0.0;
    float error;
    dml_two_product(a, b, error);
    return error;
}

// e^(-t²/2) for t in [0.75, 15), t² carried in two floats: t² rounded would move e^ by up
// to 2^-25 t², 7 ULP at t = 15.
float dml_gauss(float t) {
    float square_error;
    float square = dml_two_product(t, t, square_error);
    float e = dml_exp(-0.5 * square);
    return dml_sub(e, dml_mul(e, 0.5 * square_error));  // e may be subnormal
}

// g(t) = t Φ(-t) e^(t²/2) for t in [0.75, 15)
float dml_gauss_tail(float t) {
    if (t < 2.5) {
        precise float z = t - TAIL0_CENTRE;
        return dml_gauss_tail0(z);
    }
    if (t < 5.0) {
        precise float z = t - TAIL1_CENTRE;
        return dml_gauss_tail1(z);
    }
    precise float z = dml_div(1.0, t) - TAIL2_CENTRE;
    return dml_gauss_tail2(z);
}

float dml_gelu(float x) {
    if (dml_isnan(x)) return x;
    float t = abs(x);
    if (t <= 0.75) {
        precise float s = x * x;
        float p = dml_gelu_series(s);
        return dml_add(dml_mul(0.5, x), dml_mul(x, dml_mul(x, p)));  // x may be subnormal
    }
    // -0 as x's sign bit, never as a constant: a compiler may turn a select between a
    // constant and a zero into a conversion that loses the zero's sign (Mesa does).
    if (t >= GAUSS_TAIL_END) return x > 0.0 ? x : uintBitsToFloat(floatBitsToUint(x) & 0x80000000u);
    float tail = dml_mul(dml_gauss(t), dml_gauss_tail(t));  // t Φ(-t) = -GELU(-t), maybe subnormal
    return x > 0.0 ? dml_sub(x, tail) : dml_neg(tail);
}

float dml_gelu_slope(float x) {
    if (dml_isnan(x)) return x;
    float t = abs(x);
    if (t <= 0.75) {
        precise float s = x * x;
        float q = dml_gelu_slope_series(s);
        // x q carried in two floats: near GELU's minimum (x = -0.7518) 1/2 + x q cancels
        float low;
        float high = dml_two_product(x, q, low);
        precise float result = (0.5 + high) + low;
        return result;
    }
    // GELU'(-t) = Φ(-t) - t φ(t) = e^(-t²/2) (g(t)/t - t/√(2π)): negative, tending to -0
    if (t >= GAUSS_TAIL_END) return x > 0.0 ? 1.0 : uintBitsToFloat(floatBitsToUint(x) & 0x80000000u);
    precise float slope_factor = dml_div(dml_gauss_tail(t), t) - t * INV_SQRT_2PI;
    float negative_side = dml_mul(dml_gauss(t), slope_factor);  // maybe subnormal
    return x > 0.0 ? dml_sub(1.0, negative_side) : negative_side;
}

// The further functions, each file where a kernel calls one of its functions.
#if defined(USES_TRIGONOMETRIC)
#include "trigonometric.glsl"
#endif
#if defined(USES_INVERSE_TRIGONOMETRIC)
#include "inverse_trigonometric.glsl"
#endif
#if defined(USES_HYPERBOLIC)
#include "hyperbolic.glsl"
#endif
#if defined(USES_POWER)
#include "power.glsl"
#endif
