// sin, cos and tan of FP32 numbers, dmlpy's own. x = q pi/2 + r with |r| <= pi/4 (a
// little more where q comes from a rounded product), r carried in two floats (rh + rl),
// then sin r or cos r by polynomial, chosen and signed by q mod 4. The reduction is
// accurate for every finite x, so results next to the multiples of pi/2 keep their relative
// accuracy: the FP32 number closest to one, 16367173 * 2^72, is 2^-29.2 away from it, so
// |rh| >= 2^-29.2, and no intermediate below is subnormal (terms that could be are left
// out where they are negligible; a subnormal x never reaches the hardware: it is its own
// sine).

const float TRIG_TWO_OVER_PI = 0.63661975;
// Cody-Waite: pi/2 = TRIG_PIO2_PART1 + ... + TRIG_PIO2_PART4 to within 2^-76. The first
// three have at most 15 significant bits, so k times each is exact for the k < 512 used
// with them.
const float TRIG_PIO2_PART1 = 1.5708008;
const float TRIG_PIO2_PART2 = -4.454516e-06;
const float TRIG_PIO2_PART3 = 6.077272e-11;
const float TRIG_PIO2_PART4 = -1.7151245e-15;
const float TRIG_CODY_WAITE_LIMIT = 512.0;
// pi/2 = TRIG_PIO2_HI + TRIG_PIO2_LO to within 2^-49, for the fraction Payne-Hanek leaves.
const float TRIG_PIO2_HI = 1.5707964;
const float TRIG_PIO2_LO = -4.371139e-08;
// 2/pi in binary from 2^-1 on, behind a word of zeros: a window of it starts at bit
// (exponent + 7) of this array, exponent 9 and up.
const uint TRIG_TWO_OVER_PI_BITS[8] = uint[8](0u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u,
                                          0x3C439041u, 0xFE5163ABu);

// x = k pi/2 + rh + rl for 2^-12 <= x < 512 (k <= 326). x - k TRIG_PIO2_PART1 is exact (the
// two are within a factor 2 of each other), the next two parts are subtracted with their
// errors kept; k TRIG_PIO2_PART4 is rounded (by 2^-65 at most) and the four parts miss
// k pi/2 by 2^-67, far below the 2^-27.8 that r is at least here.
int dml_trig_reduce_cody_waite(float x, out float rh, out float rl) {
    precise float scaled = x * TRIG_TWO_OVER_PI;
    float k = roundEven(scaled);
    precise float head = x - k * TRIG_PIO2_PART1;
    float error2, error3;
    float middle = dml_two_sum(head, -(k * TRIG_PIO2_PART2), error2);
    float high = dml_two_sum(middle, -(k * TRIG_PIO2_PART3), error3);
    precise float low = (error2 + error3) - k * TRIG_PIO2_PART4;
    precise float sum = high + low;
    precise float rest = low - (sum - high);
    rh = sum;
    rl = rest;
    return int(k);
}

// x = q pi/2 + rh + rl for x >= 512, Payne-Hanek: with x = m 2^(e - 23), the bits of 2/pi
// worth 2^-(e - 25) and more make x 2/pi a multiple of 4, so only the 96 bits after them
// count. m times them (integers, exact) is x 2/pi modulo 4 in units of 2^-94, off by less
// than 2^-70: the top two bits are the quadrant, the other 94 the fraction.
int dml_trig_reduce_payne_hanek(float x, out float rh, out float rl) {
    uint bits = floatBitsToUint(x);
    uint significand = (bits & 0x7FFFFFu) | 0x800000u;
    uint first = (bits >> 23) - 120u;  // e + 7
    uint word = first >> 5, shift = first & 31u;
    // Words word .. word + 3 of the table, read at constant indices (lavapipe takes seconds
    // to compile a const array indexed by a variable).
    uvec4 words = uvec4(0u);
    [[unroll]] for (uint j = 0u; j < 8u; ++j)
        if (j - word < 4u) words = uvec4(words.yzw, TRIG_TWO_OVER_PI_BITS[j]);
    // (a >> 1) >> (31 - shift) is a >> (32 - shift), and 0 for shift 0
    uvec3 window = (words.xyz << shift) | ((words.yzw >> 1) >> (31u - shift));  // most significant first
    uint high0, low0, high1, low1, high2, low2, carry;
    umulExtended(significand, window.z, high0, low0);
    umulExtended(significand, window.y, high1, low1);
    umulExtended(significand, window.x, high2, low2);
    uint product1 = uaddCarry(low1, high0, carry);
    uint product2 = low2 + high1 + carry;  // what carries beyond is a multiple of 4
    // The fraction as 96 bits from 2^-1 down: at 1/2 or more it is taken from the next
    // quadrant instead, as its negation (the one's complement, 2^-96 off).
    uint quadrant = product2 >> 30;
    uint fraction2 = (product2 << 2) | (product1 >> 30);
    uint fraction1 = (product1 << 2) | (low0 >> 30);
    uint fraction0 = low0 << 2;
    bool negative = (fraction2 >> 31) != 0u;
    if (negative) {
        quadrant += 1u;
        fraction2 = ~fraction2;
        fraction1 = ~fraction1;
        fraction0 = ~fraction0;
    }
    // The fraction is at least 2^-29.9 of a quadrant (see the top), so its leading one lies
    // in fraction2: its first 48 bits from there, as a float pair, exactly.
    int lead_shift = 31 - findMSB(fraction2);  // 0 to 29
    uint top = (fraction2 << lead_shift) | ((fraction1 >> 1) >> (31 - lead_shift));
    uint next = (fraction1 << lead_shift) | ((fraction0 >> 1) >> (31 - lead_shift));
    float fraction_high = float(top >> 8) * uintBitsToFloat(uint(103 - lead_shift) << 23);  // 2^(-24 - lead_shift)
    float fraction_low = float(((top & 0xFFu) << 16) | (next >> 16)) * uintBitsToFloat(uint(79 - lead_shift) << 23);
    // times pi/2, in two floats
    float product_error;
    float product = dml_two_product(fraction_high, TRIG_PIO2_HI, product_error);
    precise float low = product_error + (fraction_high * TRIG_PIO2_LO + fraction_low * TRIG_PIO2_HI);
    precise float sum = product + low;
    precise float rest = low - (sum - product);
    rh = negative ? -sum : sum;
    rl = negative ? -rest : rest;
    return int(quadrant);
}

int dml_trig_reduce(float x, out float rh, out float rl) {
    return x < TRIG_CODY_WAITE_LIMIT ? dml_trig_reduce_cody_waite(x, rh, rl) : dml_trig_reduce_payne_hanek(x, rh, rl);
}

// sin(rh + rl) = high + low for |rh| <= 0.786: rh + rh^3 S(rh^2), S fitted (relative error
// 2^-28 over the interval), plus rl cos rh.
float dml_sin_reduced(float rh, float rl, out float low) {
    precise float z = rh * rh;
    precise float series = -0.16666667 + z * (0.008333329 + z * (-0.00019839306 + z * 2.718064e-06));
    precise float tail = rl * (1.0 - 0.5 * z) + (rh * z) * series;
    precise float high = rh + tail;
    precise float rest = tail - (high - rh);
    low = rest;
    return high;
}

// cos(rh + rl) = high + low for |rh| <= 0.786: 1 - rh^2/2 + rh^4 C(rh^2), C fitted (relative
// error 2^-30), with rh^2 exact in two floats and the rounding of 1 - rh^2/2 kept; minus
// rl sin rh, which only counts where |rh| >= 2^-12 (below, it is under 2^-48 and the
// product could be subnormal).
float dml_cos_reduced(float rh, float rl, out float low) {
    float square_error;
    float square = dml_two_product(rh, rh, square_error);
    precise float half_square = 0.5 * square;
    precise float high = 1.0 - half_square;
    precise float rounding = (1.0 - high) - half_square;  // exact
    precise float series = 0.041666668 + square * (-0.0013888883 + square * (2.4799454e-05 + square * -2.7205212e-07));
    precise float rl_sin = dml_abs(rh) >= 2.44140625e-04 ? rl * rh : 0.0;
    precise float tail = ((rounding - 0.5 * square_error) + (square * square) * series) - rl_sin;
    precise float result = high + tail;
    precise float rest = tail - (result - high);
    low = rest;
    return result;
}

const uint TRIG_NAN = 0x7FC00000u;
const uint TRIG_TINY_BITS = 0x39800000u;  // 2^-12: below, sin x and tan x round to x, cos x to 1

float dml_sin(float x) {
    uint bits = floatBitsToUint(x);
    uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u) return magnitude == 0x7F800000u ? uintBitsToFloat(TRIG_NAN) : x;
    if (magnitude < TRIG_TINY_BITS) return x;
    float rh, rl, low;
    int quadrant = dml_trig_reduce(uintBitsToFloat(magnitude), rh, rl);
    float value = (quadrant & 1) == 0 ? dml_sin_reduced(rh, rl, low) : dml_cos_reduced(rh, rl, low);
    uint sign = (bits & 0x80000000u) ^ (uint(quadrant & 2) << 30);  // sin(-x) = -sin x
    return uintBitsToFloat(floatBitsToUint(value) ^ sign);
}

float dml_cos(float x) {
    uint magnitude = floatBitsToUint(x) & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u) return magnitude == 0x7F800000u ? uintBitsToFloat(TRIG_NAN) : x;
    if (magnitude < TRIG_TINY_BITS) return 1.0;
    float rh, rl, low;
    int quadrant = dml_trig_reduce(uintBitsToFloat(magnitude), rh, rl);
    float value = (quadrant & 1) == 0 ? dml_cos_reduced(rh, rl, low) : dml_sin_reduced(rh, rl, low);
    uint sign = uint((quadrant + 1) & 2) << 30;  // negative in quadrants 1 and 2
    return uintBitsToFloat(floatBitsToUint(value) ^ sign);
}

// 1 / d to within about an ULP, for 2^-30 <= |d| <= 1: an estimate from the bits (5% off
// at most) and three Newton steps, each squaring the relative error.
float dml_trig_reciprocal(float d) {
    uint bits = floatBitsToUint(d);
    float y = uintBitsToFloat((0x7EF311C2u - (bits & 0x7FFFFFFFu)) | (bits & 0x80000000u));
    for (int i = 0; i < 3; ++i) {
        precise float next = y * (2.0 - d * y);
        y = next;
    }
    return y;
}

// tan r = sin r / cos r, and -cos r / sin r in the odd quadrants: q = n (1/d), then
// corrected by (n - q d) / d with n and d in two floats and q d exact, so the result is
// within about half an ULP of the true quotient.
float dml_tan(float x) {
    uint bits = floatBitsToUint(x);
    uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u) return magnitude == 0x7F800000u ? uintBitsToFloat(TRIG_NAN) : x;
    if (magnitude < TRIG_TINY_BITS) return x;
    float rh, rl, sin_low, cos_low;
    int quadrant = dml_trig_reduce(uintBitsToFloat(magnitude), rh, rl);
    float sin_high = dml_sin_reduced(rh, rl, sin_low);
    float cos_high = dml_cos_reduced(rh, rl, cos_low);
    bool odd = (quadrant & 1) != 0;
    float numerator = odd ? cos_high : sin_high, numerator_low = odd ? cos_low : sin_low;
    float denominator = odd ? sin_high : cos_high, denominator_low = odd ? sin_low : cos_low;
    // A low part under 2^-90 moves n / d by under 2^-60 of itself (|d| >= 2^-30): dropped, so
    // that q times it (q >= 2^-30) cannot be subnormal.
    denominator_low = dml_abs(denominator_low) < 8.077936e-28 ? 0.0 : denominator_low;
    float reciprocal = dml_trig_reciprocal(denominator);
    precise float quotient = numerator * reciprocal;
    float product_error;
    float product = dml_two_product(quotient, denominator, product_error);
    precise float residual = ((numerator - product) - product_error) + numerator_low;  // n - p: exact
    precise float result = quotient + (residual - quotient * denominator_low) * reciprocal;
    uint sign = (bits & 0x80000000u) ^ (odd ? 0x80000000u : 0u);  // tan(-x) = -tan x; -cot r
    return uintBitsToFloat(floatBitsToUint(result) ^ sign);
}
