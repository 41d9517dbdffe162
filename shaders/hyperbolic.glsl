// dmlpy's own sinh, cosh, asinh, acosh, atanh and erf, built like transcendental.glsl's
// functions (precise FP32 operations, integer bit work, no driver builtins). Each is within
// 2 ULP of the true result for every FP32 input (tests/test_elementwise_math.py): near their
// cancellations the intermediate values are carried in two floats (a value and its rounding
// error), so that only the last operation rounds noticeably.
//
// Polynomial coefficients: least-squares fits of the final relative error (Lawson's
// iteration toward minimax), each coefficient rounded to FP32 before the later ones are
// refitted; the comment above each names the worst error of the fit in FP32.

// sqrt(high + low) = root + root_low for high > 0 and |low| within an ULP or so of high:
// the correctly rounded root of high, and the first-order correction from the exact residual.
float dml_hyp_sqrt_two_float(float high, float low, out float root_low) {
    float root = dml_sqrt(high);
    float square_error;
    float square = dml_two_product(root, root, square_error);
    precise float residual = ((high - square) - square_error) + low;  // high - square is exact
    precise float correction = residual * dml_reciprocal_estimate(root + root, 2);
    root_low = correction;
    return root;
}

// log(2^extra (high + low)) for a normal high in [2^-60, 2^64] and |low| <= ULP(high):
// high + low = 2^k (1 + z), 1 + z near [sqrt(1/2), sqrt(2)], log(1 + z) = 2 atanh(s) with
// s = z / (2 + z) carried in two floats, and k ln 2 added with its rounding error carried,
// so that the result is rounded about once.
float dml_hyp_log_two_float(float high, float low, int extra) {
    uint bits = floatBitsToUint(high);
    int k = int(bits >> 23) - 127;
    float m = uintBitsToFloat((bits & 0x7FFFFFu) | 0x3F800000u);  // in [1, 2)
    if (m > SQRT2) {
        m *= 0.5;
        k += 1;
    }
    precise float f = m - 1.0;  // exact
    precise float f_low = low * uintBitsToFloat(uint(127 - k) << 23);  // low 2^-k, exact
    precise float denominator = 2.0 + f;
    precise float denominator_low = f - (denominator - 2.0);  // exact: 2 >= |f|
    float s = dml_quotient_estimate(f, denominator);
    float product_error;
    float product = dml_two_product(s, denominator, product_error);
    // (z - s (2 + z)) / (2 + z), where 1 / (2 + z) = (1 - s) / 2; f - product is exact
    precise float residual = ((f - product) - product_error) + (f_low - s * (denominator_low + f_low));
    precise float s_low = residual * (0.5 - 0.5 * s);
    // 2 atanh(s) - 2 s, Taylor to s^11: |s| <= 0.1716, the first term left out is below 2^-34
    precise float s2 = s * s;
    precise float series = 0.2222222238779068 + s2 * 0.1818181872367859;
    series = 0.2857142984867096 + s2 * series;
    series = 0.4000000059604645 + s2 * series;
    series = 0.6666666865348816 + s2 * series;
    precise float odd = (s * s2) * series;
    float kf = float(k + extra);
    precise float whole = kf * LN2_HI;  // exact
    float sum_error;
    float sum = dml_two_sum(whole, s + s, sum_error);
    precise float result = sum + (sum_error + (((s_low + s_low) + odd) + kf * LN2_LO));
    return result;
}

// (e^a + sign e^-a) / 2 for 2^-12 <= a <= 89.5, sign -1 only for a >= 1 (sinh; +1 for cosh).
// e^a = 2^k (high + low) from Cody and Waite's reduction, low carrying what rounding r and
// high dropped; e^-a = 2^-2k / (high + low) = 2^-2k inverse (1 + residual); their sum
// carried in two floats, scaled once by 2^(k - 1): no overflow where the result is finite
// (e^a alone overflows beyond 88.72).
float dml_hyp_half_exp_sum(float a, float sign) {
    float r;
    int k = dml_reduce(a, r);
    float q = dml_expm1_reduced(r);
    float kf = float(k);
    precise float r_low = ((a - kf * LN2_HI) - r) - kf * LN2_LO;  // what rounding r dropped
    precise float high = 1.0 + q;
    precise float low = (q - (high - 1.0)) + high * r_low;  // high's rounding error (exact), e^r_low = 1 + r_low
    if (k >= 16) {  // e^-a is below 2^-31 of e^a: nothing to add
        precise float alone = high + low;
        return dml_scaled(alone, k - 1);
    }
    float inverse = dml_reciprocal_estimate(high, 3);
    float product_error;
    float product = dml_two_product(inverse, high, product_error);
    precise float residual = ((1.0 - product) - product_error) - inverse * low;  // 1 - inverse (high + low)
    precise float other = (sign * uintBitsToFloat(uint(127 - 2 * k) << 23)) * inverse;  // exact: 2^-2k
    float sum_error;
    float sum = dml_two_sum(high, other, sum_error);
    precise float inner = sum + ((sum_error + low) + other * residual);
    return dml_scaled(inner, k - 1);
}

// magnitude with the sign of `sign`, on bits.
float dml_hyp_with_sign_of(float magnitude, float sign) {
    return uintBitsToFloat((floatBitsToUint(magnitude) & 0x7FFFFFFFu) | (floatBitsToUint(sign) & 0x80000000u));
}

const float HYPERBOLIC_TINY = 0.000244140625;  // 2^-12: below it sinh, asinh, atanh round to x and cosh to 1
const float HYPERBOLIC_OVERFLOW = 89.5;  // beyond it sinh and cosh exceed FLT_MAX (from 89.416)
const float HYPERBOLIC_LARGE = 8192.0;  // 2^13: from it asinh x and acosh x are log(2x) to 2^-30

float dml_sinh(float x) {
    float a = dml_abs(x);
    if (dml_isnan(x) || a < HYPERBOLIC_TINY) return x;  // also ±0 and subnormals
    if (a > HYPERBOLIC_OVERFLOW) return dml_hyp_with_sign_of(uintBitsToFloat(0x7F800000u), x);
    if (a >= 1.0) return dml_hyp_with_sign_of(dml_hyp_half_exp_sum(a, -1.0), x);
    // a + a^3 (1/3! + a^2/5! + ... + a^8/11!): the first term left out is below 2^-32 of it
    precise float z = a * a;
    precise float series = 0.00019841270113829523 + z * (2.7557318844628753e-06 + z * 2.5052107943679403e-08);
    series = 0.1666666716337204 + z * (0.008333333767950535 + z * series);
    precise float result = a + a * (z * series);
    return dml_hyp_with_sign_of(result, x);
}

float dml_cosh(float x) {
    float a = dml_abs(x);
    if (dml_isnan(x)) return x;
    if (a < HYPERBOLIC_TINY) return 1.0;
    if (a > HYPERBOLIC_OVERFLOW) return uintBitsToFloat(0x7F800000u);
    return dml_hyp_half_exp_sum(a, 1.0);
}

// log(a + sqrt(a^2 + one)) for one = ±1 and 0.5 <= a < 2^13 (a > 1 where one is -1): a^2 +
// one, its root and a + root each carried in two floats (acosh near 1 would otherwise lose
// everything to the cancellation in a^2 - 1, asinh and acosh elsewhere several ULP).
float dml_hyp_log_root_sum(float a, float one) {
    float square_error;
    float square = dml_two_product(a, a, square_error);
    float radicand_error;
    float radicand = dml_two_sum(square, one, radicand_error);
    precise float radicand_low = radicand_error + square_error;
    float root_low;
    float root = dml_hyp_sqrt_two_float(radicand, radicand_low, root_low);
    float sum_error;
    float sum = dml_two_sum(a, root, sum_error);
    precise float sum_low = sum_error + root_low;
    return dml_hyp_log_two_float(sum, sum_low, 0);
}

float dml_asinh(float x) {
    float a = dml_abs(x);
    if (dml_isnan(x) || a < HYPERBOLIC_TINY || a == uintBitsToFloat(0x7F800000u)) return x;
    float magnitude;
    if (a < 0.5) {
        // a + a^3 P(a^2); fit within 0.001 x 2^-24
        precise float z = a * a;
        precise float series = -0.0200499277561903 + z * 0.00925722811371088;
        series = 0.03003363311290741 + z * series;
        series = -0.04461609944701195 + z * series;
        series = 0.07499907165765762 + z * series;
        series = -0.1666666567325592 + z * series;
        precise float result = a + a * (z * series);
        magnitude = result;
    } else if (a < HYPERBOLIC_LARGE) {
        magnitude = dml_hyp_log_root_sum(a, 1.0);
    } else {
        precise float scaled = a * 5.421010862427522e-20;  // a 2^-64, exact: log(2a) without overflow
        magnitude = dml_hyp_log_two_float(scaled, 0.0, 65);
    }
    return dml_hyp_with_sign_of(magnitude, x);
}

float dml_acosh(float x) {
    if (dml_isnan(x) || x == uintBitsToFloat(0x7F800000u)) return x;
    if (x < 1.0) return uintBitsToFloat(0x7FC00000u);
    if (x == 1.0) return 0.0;
    if (x < HYPERBOLIC_LARGE) return dml_hyp_log_root_sum(x, -1.0);
    precise float scaled = x * 5.421010862427522e-20;  // x 2^-64, exact: log(2x) without overflow
    return dml_hyp_log_two_float(scaled, 0.0, 65);
}

float dml_atanh(float x) {
    float a = dml_abs(x);
    if (dml_isnan(x) || a < HYPERBOLIC_TINY) return x;
    if (a > 1.0) return uintBitsToFloat(0x7FC00000u);
    if (a == 1.0) return dml_hyp_with_sign_of(uintBitsToFloat(0x7F800000u), x);
    float magnitude;
    if (a < 0.5) {
        // a + a^3 P(a^2); fit within 0.0022 x 2^-24
        precise float z = a * a;
        precise float series = 0.016977893188595772 + z * 0.18511232733726501;
        series = 0.10524042695760727 + z * series;
        series = 0.10929443687200546 + z * series;
        series = 0.14297813177108765 + z * series;
        series = 0.199996218085289 + z * series;
        series = 0.3333333730697632 + z * series;
        precise float result = a + a * (z * series);
        magnitude = result;
    } else {
        // log((1 + a) / (1 - a)) / 2, the quotient carried in two floats
        precise float denominator = 1.0 - a;  // exact
        precise float numerator = 1.0 + a;
        precise float numerator_low = a - (numerator - 1.0);  // exact: 1 >= a
        float quotient = dml_quotient_estimate(numerator, denominator);
        float product_error;
        float product = dml_two_product(quotient, denominator, product_error);
        // numerator - product is exact
        precise float residual = ((numerator - product) - product_error) + numerator_low;
        precise float quotient_low = residual * dml_reciprocal_estimate(denominator, 2);
        precise float half_log = 0.5 * dml_hyp_log_two_float(quotient, quotient_low, 0);
        magnitude = half_log;
    }
    return dml_hyp_with_sign_of(magnitude, x);
}

// erf, on |x|: x (2/sqrt(pi)) below 2^-14 (the next term is below 2^-29 of it); x + x Q(x^2)
// below 0.75; erf(1.125) + u S(u), u = x - 1.125, below 1.5 (near 1 the forms on either
// side would round terms nearly as large as the result several times); 1 - e^(-x^2) R(x)
// below 4, with R(x) = erfc(x) e^(x^2) smooth and x^2 carried in two floats; 1 beyond
// (erfc(4) < 2^-25).
const float ERF_TWO_OVER_SQRT_PI_HIGH = 1.128379225730896;
const float ERF_TWO_OVER_SQRT_PI_LOW = -5.8635382771399236e-08;

// (2/sqrt(pi)) a for a zero or subnormal a = n 2^-149, rounded once: a whole number of 2^-149,
// below 2^24 of them, which a float's bits count directly. n (2/sqrt(pi)) is formed in two
// floats (all normal: no device flushes them) and rounded to the nearest whole number.
float dml_hyp_erf_subnormal(uint n) {
    float count = float(n);  // exact
    float low;
    float high = dml_two_product(count, ERF_TWO_OVER_SQRT_PI_HIGH, low);
    precise float rest = low + count * ERF_TWO_OVER_SQRT_PI_LOW;
    float whole = roundEven(high);
    precise float fraction = high - whole;  // exact, in [-1/2, 1/2]
    precise float up = 0.5 - fraction;  // exact: fraction is a multiple of 2^-23
    precise float down = -0.5 - fraction;
    float rounded = rest > up ? whole + 1.0 : (rest < down ? whole - 1.0 : whole);
    return uintBitsToFloat(uint(rounded));
}

float dml_erf(float x) {
    float a = dml_abs(x);
    if (dml_isnan(x)) return x;
    float magnitude;
    if (a < 6.103515625e-05) {
        if (floatBitsToUint(a) < 0x00800000u) {
            magnitude = dml_hyp_erf_subnormal(floatBitsToUint(a));
        } else {
            // a (2/sqrt(pi)) on a 2^64 (exact), the product's rounding error carried, scaled
            // back (exact): rounded once, also where the error would be too small to carry
            precise float scaled = a * 1.8446744073709552e19;
            precise float product = scaled * ERF_TWO_OVER_SQRT_PI_HIGH;
            float product_error = dml_product_error(scaled, ERF_TWO_OVER_SQRT_PI_HIGH);
            precise float sum = product + (product_error + scaled * ERF_TWO_OVER_SQRT_PI_LOW);
            precise float unscaled = sum * 5.421010862427522e-20;
            magnitude = unscaled;
        }
    } else if (a < 0.75) {
        // Q(z) = erf(x)/x - 1 = (2/sqrt(pi) - 1, in two floats) + z P(z); fit within 0.0018 x 2^-24
        precise float z = a * a;
        precise float series = -0.0008266745135188103 + z * 8.91402960405685e-05;
        series = 0.005211388226598501 + z * series;
        series = -0.02686331979930401 + z * series;
        series = 0.11283762007951736 + z * series;
        series = -0.37612637877464294 + z * series;
        precise float q = 0.12837916612625122 + (9.692613378575743e-10 + z * series);
        precise float result = a + a * q;
        magnitude = result;
    } else if (a < 1.5) {
        // S(u) = (erf(1.125 + u) - erf(1.125)) / u, u exact; fit within 0.0027 x 2^-24
        precise float u = a - 1.125;
        precise float series = -0.00016694872465450317 + u * 0.0008772529545240104;
        series = -0.00593935139477253 + u * series;
        series = 0.009535002522170544 + u * series;
        series = 0.015525098890066147 + u * series;
        series = -0.06131582707166672 + u * series;
        series = 0.027973920106887817 + u * series;
        series = 0.16245202720165253 + u * series;
        series = -0.35805821418762207 + u * series;
        series = 0.31827396154403687 + u * series;
        precise float result = 0.8883882164955139 + (1.520619363759579e-08 + u * series);
        magnitude = result;
    } else if (a < 4.0) {
        // R in u = a - 2.75 (exact); fit within 0.0059 x 2^-24 of erf
        precise float u = a - 2.75;
        precise float series = -9.172031423076987e-05 + u * -0.00013691252388525754;
        series = -0.0006590689881704748 + u * series;
        series = 0.0017107443418353796 + u * series;
        series = -0.005874055437743664 + u * series;
        series = 0.019786259159445763 + u * series;
        series = -0.06323517113924026 + u * series;
        series = 0.19366174936294556 + u * series;
        float square_error;
        float square = dml_two_product(a, a, square_error);
        precise float tail = dml_exp(-square) * series;  // erfc(a) e^(square_error)
        precise float result = 1.0 - (tail - tail * square_error);
        magnitude = result;
    } else {
        magnitude = 1.0;
    }
    return dml_hyp_with_sign_of(magnitude, x);
}
