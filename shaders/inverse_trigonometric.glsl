// asin, acos, atan and atan2, all as the angle of a point: atan2(y, x) = a multiple of pi/2
// plus or minus atan(n / d), where n / d <= 1 is the smaller coordinate over the larger.
// The quotient is carried in two floats (an estimate and its exact residual), and so are atan of
// it and the multiple of pi/2, so only the last addition rounds noticeably: within about
// 0.6 ULP.

const float HALF_PI_HI = 1.5707963705062866;      // pi/2 rounded
const float HALF_PI_LO = -4.371138828673793e-08;  // pi/2 - HALF_PI_HI, rounded
const float PI_HI = 3.1415927410125732;
const float PI_LO = -8.742277657347586e-08;
const float QUARTER_PI_HI = 0.7853981852531433;
const float QUARTER_PI_LO = -2.1855694143368964e-08;

const float ATAN_HALF_HI = 0.46364760398864746;  // atan(1/2) rounded
const float ATAN_HALF_LO = 5.01215868808913e-09;

// atan(N / D) = hi + lo, for N = n + n_lo <= D = d + d_lo (each pair a float and a small
// correction), 1/2 <= d <= 2, n / d >= 2^-17 or n = 0: every intermediate below is normal.
// atan(N / D) = atan c + atan t with t = (N - c D) / (D + c N), c = 0, 1/2 or 1 as N / D
// lies below 1/4, below 3/4 or above: |t| <= 1/4, c N and c D exact, N - c D exact
// (Sterbenz). t is a rounded quotient plus its residual e (Dekker), and atan t is
// t + t^3 P(t^2), fitted in float64 for relative error (2^-30.9 with the coefficients
// rounded).
float dml_atan_ratio(float n, float n_lo, float d, float d_lo, out float lo) {
    bool beyond_quarter = 4.0 * n >= d;
    bool beyond_three_quarters = 4.0 * n >= 3.0 * d;
    float c = beyond_three_quarters ? 1.0 : beyond_quarter ? 0.5 : 0.0;
    precise float top = n - c * d;
    precise float top_lo = n_lo - c * d_lo;
    precise float bottom = d + c * n;
    precise float bottom_lo = ((d - bottom) + c * n) + (d_lo + c * n_lo);  // Fast2Sum: d >= c n
    float t = dml_quotient_estimate(top, bottom);
    float product_error;
    float product = dml_two_product(t, bottom, product_error);
    precise float residual = ((top - product) - product_error) + (top_lo - t * bottom_lo);
    precise float e = residual * dml_reciprocal_estimate(bottom, 1);
    precise float t2 = t * t;
    precise float odd = (t * t2) * (-0.33333325386047363 + t2 * (0.19998666644096375 + t2 * (-0.14220456779003143 + t2 * 0.09834806621074677)));
    float base_hi = beyond_three_quarters ? QUARTER_PI_HI : beyond_quarter ? ATAN_HALF_HI : 0.0;
    float base_lo = beyond_three_quarters ? QUARTER_PI_LO : beyond_quarter ? ATAN_HALF_LO : 0.0;
    precise float hi = base_hi + t;
    precise float sum_error = (base_hi - hi) + t;  // exact: |t| < base_hi, or base_hi = 0
    precise float low = base_lo + (sum_error + (odd + e * (1.0 - t2)));  // atan'(t) = 1 - t^2 to 2^-8
    lo = low;
    return hi;
}

// The angle of the point (x, y), from r = atan(smaller coordinate / larger) in two floats
// (magnitudes; r_hi may be subnormal): r, pi/2 - r, pi/2 + r or pi - r, by which
// coordinate is larger (steep: |y|) and x's sign, then y's sign.
float dml_angle(bool steep, bool x_negative, float r_hi, float r_lo, bool y_negative) {
    float magnitude;
    if (!steep && !x_negative) {
        magnitude = dml_add(r_hi, r_lo);
    } else {
        float base_hi = steep ? HALF_PI_HI : PI_HI, base_lo = steep ? HALF_PI_LO : PI_LO;
        bool subtract = steep != x_negative;
        float turn_hi = subtract ? dml_neg(r_hi) : r_hi, turn_lo = subtract ? dml_neg(r_lo) : r_lo;
        float sum = dml_add(base_hi, turn_hi);
        float sum_error = dml_add(base_hi - sum, turn_hi);  // exact: |turn_hi| <= pi/4 <= base_hi / 2
        // a subnormal sum_error (turn_hi is) is far below base_lo's ULP: flushed or not, the same
        precise float result = sum + ((base_lo + turn_lo) + sum_error);
        magnitude = result;
    }
    return y_negative ? dml_neg(magnitude) : magnitude;
}

// The angle of the point (x + x_lo, y + y_lo) for magnitudes given in two floats, y_negative
// and x_negative their signs; the larger in [1/2, 2], the smaller over it 2^-17 or more, or 0.
float dml_angle_of_point(float y, float y_lo, float x, float x_lo, bool x_negative, bool y_negative) {
    bool steep = y > x;
    float r_lo;
    float r = dml_atan_ratio(steep ? x : y, steep ? x_lo : y_lo, steep ? y : x, steep ? y_lo : x_lo, r_lo);
    return dml_angle(steep, x_negative, r, r_lo, y_negative);
}

float dml_atan2(float y, float x) {
    if (dml_isnan(y) || dml_isnan(x)) return dml_nan_of(y, x);
    uint y_bits = floatBitsToUint(y) & 0x7FFFFFFFu, x_bits = floatBitsToUint(x) & 0x7FFFFFFFu;
    bool steep = y_bits > x_bits;
    bool x_negative = (floatBitsToUint(x) >> 31) != 0u, y_negative = (floatBitsToUint(y) >> 31) != 0u;
    uint n = min(y_bits, x_bits), d = max(y_bits, x_bits);
    float r = 0.0, r_lo = 0.0;  // on an axis (n = 0), or a finite coordinate against an infinite one
    if (d == 0x7F800000u) {
        if (n == 0x7F800000u) {  // both infinite: C's diagonals
            r = QUARTER_PI_HI;
            r_lo = QUARTER_PI_LO;
        }
    } else if (n != 0u) {
        int n_exponent, d_exponent;
        uint n_significand = dml_significand(n, n_exponent), d_significand = dml_significand(d, d_exponent);
        int shift = n_exponent - d_exponent;
        if (shift < -16) {
            // n / d < 2^-15: atan of it is n / d (1 - (n / d)^2 / 3), and n / d correctly
            // rounded is within 0.51 ULP of that, subnormal or zero included
            r = dml_div(uintBitsToFloat(n), uintBitsToFloat(d));
        } else {
            // both scaled by the same power of two, on bits: d to [1, 2), n / d to more than 2^-17
            float scaled_n = uintBitsToFloat((uint(shift + 127) << 23) | (n_significand & 0x7FFFFFu));
            float scaled_d = uintBitsToFloat(0x3F800000u | (d_significand & 0x7FFFFFu));
            r = dml_atan_ratio(scaled_n, 0.0, scaled_d, 0.0, r_lo);
        }
    }
    return dml_angle(steep, x_negative, r, r_lo, y_negative);
}

// atan x is the angle of the point (1, x)
float dml_atan(float x) {
    return dml_atan2(x, 1.0);
}

// sqrt(1 - a^2) = root + lo for 2^-12 <= a <= 1 (the cosine of asin a), to about 2^-31.
// 1 - a^2 = (1 - a)(1 + a), each factor in two floats: 1 - fl(a^2) would cancel, near
// a = 1, into an error as large as 1 - a^2 itself.
float dml_cosine_of_asin(float a, out float lo) {
    precise float below = 1.0 - a;
    precise float below_lo = (1.0 - below) - a;  // exact (Fast2Sum: 1 >= a)
    precise float above = 1.0 + a;
    precise float above_lo = a - (above - 1.0);
    float w_error;
    float w = dml_two_product(below, above, w_error);
    precise float w_lo = w_error + (below * above_lo + below_lo * above);
    lo = 0.0;
    if (w == 0.0) return 0.0;  // a = 1
    float root = dml_sqrt(w);
    float root_square_error;
    float root_square = dml_two_product(root, root, root_square_error);
    // sqrt(root^2 + residual) = root + residual / (2 root), to first order
    precise float residual = ((w - root_square) - root_square_error) + w_lo;
    precise float correction = residual * (0.5 * dml_reciprocal_estimate(root, 1));
    lo = correction;
    return root;
}

// asin x is the angle of the point (sqrt(1 - x^2), x)
float dml_asin(float x) {
    if (dml_isnan(x)) return x;
    float a = dml_abs(x);
    uint a_bits = floatBitsToUint(a);
    if (a_bits > 0x3F800000u) return uintBitsToFloat(0x7FC00000u);  // |x| > 1
    if (a_bits < 0x39800000u) return x;  // |x| < 2^-12: x + x^3/6 is within 1/6 ULP of x
    float root_lo;
    float root = dml_cosine_of_asin(a, root_lo);
    return dml_angle_of_point(a, 0.0, root, root_lo, false, (floatBitsToUint(x) >> 31) != 0u);
}

// acos x is the angle of the point (x, sqrt(1 - x^2))
float dml_acos(float x) {
    if (dml_isnan(x)) return x;
    float a = dml_abs(x);
    uint a_bits = floatBitsToUint(a);
    if (a_bits > 0x3F800000u) return uintBitsToFloat(0x7FC00000u);
    bool negative = (floatBitsToUint(x) >> 31) != 0u;
    if (a_bits < 0x39800000u) return dml_angle(true, negative, a, 0.0, false);  // pi/2 - x: x may be subnormal
    float root_lo;
    float root = dml_cosine_of_asin(a, root_lo);
    return dml_angle_of_point(root, root_lo, a, 0.0, negative, false);
}
