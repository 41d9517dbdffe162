// pow(x, y) with C99's special cases (Annex F), within 2 ULP for every pair of FP32 inputs:
// |x|^y = 2^(y log2|x|), with log2|x| carried in two floats (to about 2^-36 relative) and
// y log2|x| formed by Dekker's product, so that an argument near 150 still holds about
// 2^-29 absolute; then 2^ of that two-float argument, rounded once (subnormals included).
// No tables: indexing a constant array by a computed index costs lavapipe minutes of
// compilation for the 16 copies an invocation inlines.

const float POW_TWO_OVER_LN2 = 2.885390043258667;  // 2 / ln 2 rounded, and the rest
const float POW_TWO_OVER_LN2_LOW = 3.851926067000022e-08;
const float POW_TWO_OVER_3_LN2 = 0.9617967009544373;  // 2 / (3 ln 2) rounded, and the rest
const float POW_TWO_OVER_3_LN2_LOW = -7.028461812552678e-09;
const float POW_LOG2_THREE_HALVES = 0.5849609375;  // to 16 fraction bits: k + it is exact
const float POW_LOG2_THREE_HALVES_LOW = 1.5632211898264359e-06;
const float POW_LN2 = 0.6931471824645996;  // ln 2 rounded, and the rest
const float POW_LN2_LOW = -1.9046542121259336e-09;

// a + b = sum + error exactly (Fast2Sum), where a is 0 or |a| >= |b|.
float dml_pow_fast_two_sum(float a, float b, out float error) {
    precise float sum = a + b;
    precise float rest = b - (sum - a);
    error = rest;
    return sum;
}

// log2 of a positive finite number, from its magnitude bits, as high + low (low within half
// an ULP of high).
float dml_pow_log2(uint magnitude, out float low) {
    int k;
    uint significand = dml_significand(magnitude, k);  // subnormals normalised in integers
    float m = uintBitsToFloat((significand & 0x7FFFFFu) | 0x3F800000u);  // in [1, 2)
    // log2(m) = log2 b + log2(m / b), b = 1 (m halved from sqrt(3) up) or 3/2 (from sqrt(3/2)
    // to sqrt(3)); log(m / b) = 2 atanh(s), s = (m - b) / (m + b), |s| <= 0.101.
    bool three_halves = m >= 1.2247449159622192 && m < 1.7320507764816284;
    if (m >= 1.7320507764816284) {
        m *= 0.5;
        k += 1;
    }
    float b = three_halves ? 1.5 : 1.0;
    precise float f = m - b;  // exact: m and b within a factor of 2
    precise float d = b + m;
    precise float d_low = m - (d - b);  // exact: b's exponent is at least m's
    // 1 / d = (1 / (2b)) / (1 + u), u = f / (2b), |u| <= 0.1124: Taylor to u^7, 2^-25 off
    float half_inverse = three_halves ? 0.3333333432674408 : 0.5;
    precise float u = f * half_inverse;
    precise float reciprocal = 1.0 - u * (1.0 - u * (1.0 - u * (1.0 - u * (1.0 - u * (1.0 - u * (1.0 - u))))));
    precise float inverse = half_inverse * reciprocal;
    // s in two floats: s_low = (f - s (d + d_low)) / d is below 2^-22 s, so the inverse's
    // 2^-23 leaves it 2^-45 s off
    precise float s = f * inverse;
    float product_error;
    float product = dml_two_product(s, d, product_error);
    precise float residual = ((f - product) - product_error) - s * d_low;  // f - product is exact
    precise float s_low = residual * inverse;
    // log2(m / b) = c s + s^3 (c/3 + s^2 c/5 + s^4 c/7 + ...), c = 2 / ln 2: the cubic part is
    // up to 2^-8.2 of the whole and needs 2^-30 of itself, so s^2, s^3, the bracket and
    // their product are carried in two floats; the next term is below 2^-43 of the whole.
    float square_error;
    float square = dml_two_product(s, s, square_error);
    precise float square_low = square_error + 2.0 * (s * s_low);
    float cube_error;
    float cube = dml_two_product(s, square, cube_error);
    precise float cube_low = cube_error + (s * square_low + s_low * square);
    precise float bracket_tail = square * (0.5770780444145203 + square * (0.41219857335090637
                                 + square * (0.32059890031814575 + square * 0.26230818033218384)));
    float bracket_error;
    float bracket = dml_pow_fast_two_sum(POW_TWO_OVER_3_LN2, bracket_tail, bracket_error);
    precise float bracket_low = bracket_error + POW_TWO_OVER_3_LN2_LOW;
    float odd_error;
    float odd = dml_two_product(cube, bracket, odd_error);
    precise float odd_low = odd_error + (cube * bracket_low + cube_low * bracket);
    float head_error;
    float head = dml_two_product(POW_TWO_OVER_LN2, s, head_error);
    precise float head_low = head_error + (POW_TWO_OVER_LN2_LOW * s + POW_TWO_OVER_LN2 * s_low);
    float series_error;
    float series = dml_pow_fast_two_sum(head, odd, series_error);
    // k + log2 b + series: |k + log2 b| >= 0.415 where it is not 0, and |series| <= 0.3
    precise float whole = float(k) + (three_halves ? POW_LOG2_THREE_HALVES : 0.0);  // exact
    float sum_error;
    float sum = dml_pow_fast_two_sum(whole, series, sum_error);
    precise float rest = sum_error + ((series_error + (head_low + odd_low))
                                      + (three_halves ? POW_LOG2_THREE_HALVES_LOW : 0.0));
    return dml_pow_fast_two_sum(sum, rest, low);
}

// 2^n (high + low), rounded once, for high in [0.5, 2) and |low| at most half of high's ULP:
// as dml_ldexp, low breaking the ties of a subnormal result.
float dml_pow_scaled(float high, float low, int n) {
    uint bits = floatBitsToUint(high);
    int exponent = int(bits >> 23) + n;
    if (exponent >= 1) return dml_ldexp(high, n);
    uint shift = uint(1 - exponent);
    if (shift > 25u) return 0.0;
    uint significand = (bits & 0x7FFFFFu) | 0x800000u;
    uint kept = significand >> shift;
    uint rest = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    uint low_bits = floatBitsToUint(low);  // on bits: low may be subnormal
    bool tie_up = (low_bits & 0x7FFFFFFFu) == 0u ? (kept & 1u) == 1u : (low_bits >> 31) == 0u;
    if (rest > halfway || (rest == halfway && tie_up)) kept += 1u;
    return uintBitsToFloat(kept);
}

float dml_pow(float x, float y) {
    uint ux = floatBitsToUint(x), uy = floatBitsToUint(y);
    uint ax = ux & 0x7FFFFFFFu, ay = uy & 0x7FFFFFFFu;
    if (ay == 0u || ux == 0x3F800000u) return 1.0;  // even for a NaN
    if (ax > 0x7F800000u || ay > 0x7F800000u) return dml_nan_of(x, y);
    // Whether y is an integer, and odd, on its bits: below 1 every significand bit is a fraction
    uint biased = ay >> 23;
    uint fraction_bits = biased >= 150u ? 0u : min(150u - biased, 24u);
    uint y_significand = (ay & 0x7FFFFFu) | 0x800000u;
    bool integral = (y_significand & ((1u << fraction_bits) - 1u)) == 0u;
    bool odd = integral && biased <= 150u && ((y_significand >> fraction_bits) & 1u) == 1u;
    uint sign = (ux >> 31) != 0u && odd ? 0x80000000u : 0u;
    bool y_negative = (uy >> 31) != 0u;
    if (ay == 0x7F800000u) {  // |x|^±inf: 1 for x = -1, else 0 or inf
        if (ax == 0x3F800000u) return 1.0;
        return uintBitsToFloat((ax < 0x3F800000u) == y_negative ? 0x7F800000u : 0u);
    }
    if (ax == 0u || ax == 0x7F800000u)  // 0 or inf, with x's sign where y is odd
        return uintBitsToFloat(sign | ((ax == 0u) == y_negative ? 0x7F800000u : 0u));
    if ((ux >> 31) != 0u && !integral) return uintBitsToFloat(0x7FC00000u);
    // x = -1: below, its log2 of 0 against a huge y would overflow Dekker's product
    if (ax == 0x3F800000u) return uintBitsToFloat(sign | 0x3F800000u);

    float log_low;
    float log_high = dml_pow_log2(ax, log_low);
    precise float t = y * log_high;
    // 2^129 and 2^-151 are beyond FLT_MAX and half the smallest subnormal. Within, |y| < 2^32
    // (|log2|x|| > 2^-24), so Dekker's product cannot overflow; a subnormal t (flushed or not)
    // gives 1 either way.
    if (t > 129.0) return uintBitsToFloat(sign | 0x7F800000u);
    if (t < -151.0) return uintBitsToFloat(sign);
    float t_error;
    dml_two_product(y, log_high, t_error);
    precise float t_low = t_error + y * log_low;
    float n = roundEven(t);
    precise float reduced = t - n;  // exact, |reduced| <= 1/2
    // reduced + t_low renormalised (Knuth's two-sum): t_low may exceed the few bits reduced has
    precise float r = reduced + t_low;
    precise float t_part = r - reduced;
    precise float r_low = (reduced - (r - t_part)) + (t_low - t_part);
    // 2^(r + r_low) = e^(w + w_low), |w| <= 0.3466 + 2^-16
    float w_error;
    float w = dml_two_product(r, POW_LN2, w_error);
    precise float w_low = w_error + (r * POW_LN2_LOW + r_low * POW_LN2);
    // e^(w + w_low) = 1 + w + w^2/2 + w^3 P(w) + w_low (1 + w + w^2/2), P Taylor's to w^9
    // (2^-37 off): 1 + w + w^2/2 summed in two floats, the rest (below 0.008) in one.
    float square_error;
    float square = dml_two_product(w, w, square_error);
    precise float p = 0.0013888889225199819 + w * (0.00019841270113829523
                      + w * (2.4801587642286904e-05 + w * 2.7557318844628753e-06));
    p = 0.1666666716337204 + w * (0.0416666679084301 + w * (0.008333333767950535 + w * p));
    precise float tail = (square * (w * p) + 0.5 * square_error) + w_low * (1.0 + w * (1.0 + 0.5 * w));
    float one_error;
    float one_plus = dml_pow_fast_two_sum(1.0, w, one_error);
    float half_square_error;
    float head = dml_pow_fast_two_sum(one_plus, 0.5 * square, half_square_error);
    precise float rest = (one_error + half_square_error) + tail;
    float value_low;
    float value = dml_pow_fast_two_sum(head, rest, value_low);  // in [0.707, 1.415)
    return uintBitsToFloat(sign | floatBitsToUint(dml_pow_scaled(value, value_low, int(n))));
}
