// What a stored bit pattern means, per data type: each tensor has its own, so there is one
// function per data type (or per family, with the width as a constant argument), and the
// expression renderer (dmlpy/ir/expr.py) calls the one of the tensor a value came from.
// Comparisons work on bits, so they are exact on every device, including devices that
// flush subnormals to zero.
//
// Defines: DTYPE_* (the output's data type), the range integer math saturates to.

// value > 0 for a float format whose +inf has bits infinity_bits: positive floats are the
// bit patterns 1 .. +inf; NaN, -0 and negatives lie outside.
bool float_is_positive(uint bits, uint infinity_bits) {
    return bits - 1u < infinity_bits;
}

bool signed_is_positive(uint bits, uint element_bits) {
    return bits != 0u && (bits >> (element_bits - 1u)) == 0u;
}

// value is NaN, from the stored bits of a float format (integers are never NaN)
bool float_is_nan(uint bits, uint magnitude_mask, uint infinity_bits) {
    return (bits & magnitude_mask) > infinity_bits;
}

// Order and choice between two values of one 16-bit float format (FP16, BFLOAT16: sign at
// bit 15, the magnitude below it ordered as an integer), on their stored bits: the same
// truths, and the same choices, as dml_less, dml_equal, dml_max and dml_min on their FP32
// values, without converting either. A chosen NaN is quieted (quiet_bit), as rounding its
// FP32 value back would.
int stored16_order_key(uint bits) {
    int magnitude = int(bits & 0x7FFFu);
    return (bits & 0x8000u) != 0u ? -magnitude : magnitude;  // -0 and +0 equal
}

bool stored16_is_nan(uint bits, uint infinity_bits) {
    return float_is_nan(bits, 0x7FFFu, infinity_bits);
}

bool stored16_ordered(uint a, uint b, uint infinity_bits) {  // neither is NaN
    return !stored16_is_nan(a, infinity_bits) && !stored16_is_nan(b, infinity_bits);
}

bool stored16_less(uint a, uint b, uint infinity_bits) {
    return stored16_ordered(a, b, infinity_bits) && stored16_order_key(a) < stored16_order_key(b);
}

bool stored16_less_equal(uint a, uint b, uint infinity_bits) {
    return stored16_ordered(a, b, infinity_bits) && stored16_order_key(a) <= stored16_order_key(b);
}

bool stored16_equal(uint a, uint b, uint infinity_bits) {
    return stored16_ordered(a, b, infinity_bits) && (a == b || ((a | b) & 0x7FFFu) == 0u);
}

// `first` if it is NaN or `first_wins` says so, else `second`; a NaN chosen, quieted.
uint stored16_choice(uint first, uint second, bool first_wins, uint infinity_bits, uint quiet_bit) {
    uint chosen = stored16_is_nan(first, infinity_bits) || first_wins ? first : second;
    return stored16_is_nan(chosen, infinity_bits) ? chosen | quiet_bit : chosen;
}

uint stored16_max(uint a, uint b, uint infinity_bits, uint quiet_bit) {
    return stored16_choice(a, b, stored16_less(b, a, infinity_bits), infinity_bits, quiet_bit);
}

uint stored16_min(uint a, uint b, uint infinity_bits, uint quiet_bit) {
    return stored16_choice(a, b, stored16_less(a, b, infinity_bits), infinity_bits, quiet_bit);
}

// Numbers from and to stored bits, for operators that compute in FP32. Every conversion is
// exact and rounds to nearest even on every device: integer arithmetic, and for FP16 one
// exact FP32 multiplication where the device keeps subnormals, else one FP32 addition whose
// operands and result are normal (or whose result is the same where a device flushes its
// subnormal operand), which Vulkan has every device round correctly. No reliance on how a
// driver implements packHalf2x16.
float bfloat16_to_float(uint bits) { return uintBitsToFloat(bits << 16); }

uint bfloat16_from_float(float value) {
    uint u = floatBitsToUint(value);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;  // NaN stays NaN (quiet)
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// Both conversions compute every case and select one: lavapipe runs each lane through every
// branch of an if anyway, and the selects spare it the masked stores of an early return.
float float16_to_float(uint half_bits) {
    uint magnitude = (half_bits & 0x7FFFu) << 13;  // the exponent and significand where FP32 has them
#if !defined(DENORMALS_EXACT)
    // The device keeps FP32 subnormals: those bits are the half's value times 2^-112, normal
    // or subnormal alike, so one exact multiplication by 2^112 re-biases both.
    precise float scaled = uintBitsToFloat(magnitude) * 5.192296858534828e+33;
    uint finite_or_not = magnitude >= 0x0F800000u ? magnitude | 0x7F800000u : floatBitsToUint(scaled);
    return uintBitsToFloat(((half_bits & 0x8000u) << 16) | finite_or_not);
#else
    // A normal half: the exponent re-biased (15 to 127); infinity and NaN: 31 to 255.
    uint rebiased = magnitude + (magnitude >= 0x0F800000u ? 0x70000000u : 0x38000000u);
    // Zero or subnormal, M 2^-24: 2^-14 (1 + M/1024) less 2^-14, exact (Sterbenz) and normal.
    precise float small = uintBitsToFloat(magnitude + 0x38800000u) - 6.103515625e-05;
    uint bits = magnitude < 0x00800000u ? floatBitsToUint(small) : rebiased;
    return uintBitsToFloat(((half_bits & 0x8000u) << 16) | bits);
#endif
}

uint float16_from_float(float value) {
    uint u = floatBitsToUint(value);
    uint magnitude = u & 0x7FFFFFFFu;
    // A normal half: the exponent re-biased and 23 bits rounded to 10, to nearest even (plus
    // 0xFFF, plus the kept bit's parity); a carry may reach the next exponent or infinity.
    uint normal = (magnitude - 0x37FFF001u + ((magnitude >> 13) & 1u)) >> 13;
    // Below 2^-14, a subnormal half or zero: 0.5 + |value| rounds |value| to a multiple of
    // 2^-24 (FP32's unit at 0.5), the half's unit, to nearest even, and the half's bits are
    // what lies above 0.5 (2^-14 after rounding up: the smallest normal half, 0x400). An FP32
    // subnormal a device flushes gives zero, as it rounds to.
    precise float aligned = uintBitsToFloat(magnitude) + 0.5;
    uint half_magnitude = magnitude < 0x38800000u ? floatBitsToUint(aligned) - 0x3F000000u : normal;
    half_magnitude = magnitude >= 0x477FF000u ? 0x7C00u : half_magnitude;  // 65520 and up: infinity
    half_magnitude = magnitude > 0x7F800000u ? 0x7E00u | ((magnitude >> 13) & 0x3FFu) : half_magnitude;  // NaN, quiet
    return ((u >> 16) & 0x8000u) | half_magnitude;
}

// An integer's stored bits as a number, exact up to 2^24 (every 8- and 16-bit value).
float signed_to_float(uint bits, uint element_bits) {
    return float(int(bits << (32u - element_bits)) >> (32u - element_bits));
}

// NaN tests and min/max decided on bits, so no driver's shortcut (fast-math folding of
// isnan, min/max returning either operand for NaN) changes a result: NaN in gives NaN out.
bool dml_isnan(float value) {
    return (floatBitsToUint(value) & 0x7FFFFFFFu) > 0x7F800000u;
}

// The NaN an operation on a and b gives when either is NaN: the first NaN operand, quiet.
// IEEE leaves the choice open, hardware picks an operand and compilers may swap a
// commutative operation's operands, so the exact arithmetic decides on bits instead.
float dml_nan_of(float a, float b) {
    return uintBitsToFloat((dml_isnan(a) ? floatBitsToUint(a) : floatBitsToUint(b)) | 0x00400000u);
}

// a == b as IEEE defines it (NaN equals nothing, -0 equals +0), on bits: a device that
// flushes subnormals would call two different subnormals equal.
bool dml_equal(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    if (dml_isnan(a) || dml_isnan(b)) return false;
    return ua == ub || ((ua | ub) & 0x7FFFFFFFu) == 0u;
}

// |x| and -x on bits: no device flushes or canonicalises what passes through them.
float dml_abs(float x) {
    return uintBitsToFloat(floatBitsToUint(x) & 0x7FFFFFFFu);
}

float dml_neg(float x) {
    return uintBitsToFloat(floatBitsToUint(x) ^ 0x80000000u);
}

// FP32 arithmetic and order. The hardware's operations, `precise` (never fused into an
// FMA), where the device keeps subnormal operands and results: natively, or told to by the
// DenormPreserve execution mode (float_controls.glsl). Where it may flush them to zero
// (DENORMALS_EXACT), no subnormal ever reaches its adder or multiplier: see dml_add and
// dml_mul below, and comparisons are made on bits.
#if defined(EMULATE_FLUSH)
// A device profile that flushes, planned on a device that does not: the hardware's
// operations flush subnormal operands and results (keeping the sign), as the profiled GPU's
// do, so that lavapipe proves the exact path needs nothing more.
float dml_flushed(float x) {
    uint bits = floatBitsToUint(x);
    return (bits & 0x7F800000u) == 0u ? uintBitsToFloat(bits & 0x80000000u) : x;
}

float dml_hardware_add(float a, float b) {
    precise float sum = dml_flushed(a) + dml_flushed(b);
    return dml_flushed(sum);
}

float dml_hardware_mul(float a, float b) {
    precise float product = dml_flushed(a) * dml_flushed(b);
    return dml_flushed(product);
}
#else
float dml_hardware_add(float a, float b) {
    precise float sum = a + b;
    return sum;
}

float dml_hardware_mul(float a, float b) {
    precise float product = a * b;
    return product;
}
#endif

#if defined(DENORMALS_EXACT)
// The order of two non-NaN numbers, from their bits (-0 and +0 equal).
int dml_order_key(float x) {
    uint bits = floatBitsToUint(x);
    int magnitude = int(bits & 0x7FFFFFFFu);
    return (bits >> 31) != 0u ? -magnitude : magnitude;
}

bool dml_less(float a, float b) {
    return !dml_isnan(a) && !dml_isnan(b) && dml_order_key(a) < dml_order_key(b);
}

bool dml_less_equal(float a, float b) {
    return !dml_isnan(a) && !dml_isnan(b) && dml_order_key(a) <= dml_order_key(b);
}
#else
bool dml_less(float a, float b) {
    return a < b;
}

bool dml_less_equal(float a, float b) {
    return a <= b;
}
#endif

float dml_min(float a, float b) {
    return dml_isnan(a) || dml_less(a, b) ? a : b;
}

float dml_max(float a, float b) {
    return dml_isnan(a) || dml_less(b, a) ? a : b;
}

// a / b, correctly rounded (to nearest even) on every device. Vulkan lets a driver's
// division be off by 2.5 ULP, so the quotient is formed in integer arithmetic: the
// significands are divided bit by bit (25 quotient bits and a sticky remainder), then
// rounded once, to a normal or a subnormal result. Subnormal operands are normalised in
// integers too, so nothing depends on how a device treats subnormals.
uint dml_significand(uint magnitude, out int exponent) {
    uint biased = magnitude >> 23;
    int top = findMSB(magnitude);  // a subnormal: bring its leading one to bit 23
    exponent = biased != 0u ? int(biased) - 127 : top - 149;
    return biased != 0u ? (magnitude & 0x7FFFFFu) | 0x800000u : magnitude << (uint(23 - top) & 31u);
}

// sign | 2^exponent * (quotient / 2^24), rounded once to nearest even, to a normal or a
// subnormal result: `quotient` holds 25 bits with its leading one at bit 24, `sticky` says
// whether anything below them was dropped.
float dml_rounded(uint sign, int exponent, uint quotient, bool sticky) {
    // A subnormal result drops `extra` bits more; 25 or more leave nothing (zero).
    uint extra = uint(clamp(-126 - exponent, 0, 25));
    sticky = sticky || (quotient & ((1u << extra) - 1u)) != 0u;
    quotient >>= extra;
    uint kept = quotient >> 1u;  // the rounding bit dropped
    kept += quotient & (uint(sticky) | kept) & 1u;  // to nearest, ties to even
    // kept holds the significand with its leading one (normal) or without (subnormal); a
    // carry into bit 24 or into bit 23 moves the exponent up by one, as the addition does.
    uint bits = exponent < -126 ? kept : (uint(exponent + 126) << 23) + kept;
    return uintBitsToFloat(sign | (exponent > 127 ? 0x7F800000u : min(bits, 0x7F800000u)));
}

float dml_div(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    uint sign = (ua ^ ub) & 0x80000000u;
    uint ma = ua & 0x7FFFFFFFu, mb = ub & 0x7FFFFFFFu;
    // Zeros, infinities and NaN are selected at the end; their quotient is computed from a
    // stand-in of 1, so no lane divides by zero.
    bool special = ma == 0u || mb == 0u || ma >= 0x7F800000u || mb >= 0x7F800000u;
    int ea, eb;
    uint sa = dml_significand(special ? 0x3F800000u : ma, ea), sb = dml_significand(special ? 0x3F800000u : mb, eb);
    int exponent = ea - eb;
    // The quotient's leading bit is 1 only if sa >= sb.
    bool below = sa < sb;
    uint remainder = below ? sa << 1 : sa;
    exponent -= below ? 1 : 0;
    // The quotient's 25 bits (24 of the significand and one to round with) are
    // floor(remainder 2^24 / sb). The device's division estimates them to within 6 (Vulkan
    // allows it 2.5 ULP); the exact rest remainder 2^24 - estimate sb is below 2^31 in
    // magnitude, so 32-bit arithmetic that wraps gives it exactly. A second division of the
    // rest by sb moves the estimate to within one, and two compares finish it.
    uint quotient = uint(float(remainder) / float(sb) * 16777216.0);
    int rest = int((remainder << 24) - quotient * sb);
    int steps = int(floor(float(rest) / float(sb)));
    quotient += uint(steps);
    rest -= steps * int(sb);
    bool low = rest < 0;
    quotient -= low ? 1u : 0u;
    rest += low ? int(sb) : 0;
    bool high = rest >= int(sb);
    quotient += high ? 1u : 0u;
    rest -= high ? int(sb) : 0;
    uint bits = floatBitsToUint(dml_rounded(sign, exponent, quotient, rest != 0));
    // The special operands, the later rules first so that the earlier ones win.
    bits = mb == 0u ? sign | 0x7F800000u : bits;
    bits = mb == 0x7F800000u || ma == 0u ? (mb == 0u ? 0x7FC00000u : sign) : bits;
    bits = ma == 0x7F800000u ? (mb == 0x7F800000u ? 0x7FC00000u : sign | 0x7F800000u) : bits;
    bits = mb > 0x7F800000u ? ub : bits;  // NaN in, NaN out
    bits = ma > 0x7F800000u ? ua : bits;
    return uintBitsToFloat(bits);
}

// sqrt(x), correctly rounded on every device. Vulkan lets a driver's sqrt be off by as much
// as its inversesqrt, so the hardware's root of the significand only starts the search. With
// Y = y 2^46 an integer, the correctly rounded significand q (in ULP of [1, 2)) is the one
// with (q - 1/2)^2 < Y < (q + 1/2)^2 (a root is never halfway), that is -q < Y - q^2 <= q. From
// a start within 6 ULP, Y - q^2 is below 2^31 in magnitude, so 32-bit arithmetic that wraps
// gives it exactly; one Newton step in integers moves q to within one, and two compares each
// way finish it. Subnormal x is normalised in integers. sqrt(-0) is -0, a negative x gives NaN.
float dml_sqrt(float x) {
    uint bits = floatBitsToUint(x);
    uint magnitude = bits & 0x7FFFFFFFu;
    int exponent;
    uint significand = dml_significand(max(magnitude, 1u), exponent);  // x = significand 2^(exponent - 23)
    // y = x 2^(-2 half) in [1, 4), an even power of two taken out; `low`: Y's low 32 bits
    uint odd = uint(exponent) & 1u;
    int half_exponent = exponent >> 1;  // floor(exponent / 2)
    float y = uintBitsToFloat(((127u + odd) << 23) | (significand & 0x7FFFFFu));
    uint low = significand << (23u + odd);
    float root = sqrt(y);
    int q = root >= 2.0 ? 0x1000000 : int((floatBitsToUint(root) & 0x7FFFFFu) | 0x800000u);  // in ULP of [1, 2)
    int rest = int(low - uint(q) * uint(q));  // Y - q^2
    int step = int(round(float(rest) / float(2 * q)));
    q += step;
    rest -= step * (2 * q - step);  // Y - (q_old + step)^2
    [[unroll]] for (int i = 0; i < 2; ++i) {
        bool up = rest > q, down = rest <= -q;
        rest -= up ? 2 * q + 1 : down ? 1 - 2 * q : 0;
        q += up ? 1 : down ? -1 : 0;
    }
    uint root_bits = (uint(half_exponent + 127) << 23) + (uint(q) - 0x800000u);
    bool passes = magnitude == 0u || bits == 0x7F800000u || magnitude > 0x7F800000u;
    return uintBitsToFloat(passes ? bits : (bits >> 31) != 0u ? 0x7FC00000u : root_bits);
}

// fmod(a, b) as C defines it: a - b trunc(a / b), exact (the remainder of the significands,
// one shift and subtraction per bit of the exponents' difference), the sign of a. A zero b,
// an infinite a or a NaN gives NaN; an infinite b gives a.
float dml_fmod(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    uint ma = ua & 0x7FFFFFFFu, mb = ub & 0x7FFFFFFFu;
    if (ma > 0x7F800000u || mb > 0x7F800000u) return dml_nan_of(a, b);
    if (ma == 0x7F800000u || mb == 0u) return uintBitsToFloat(0x7FC00000u);
    if (ma < mb) return a;  // an infinite b, a zero a, or |a| < |b|
    int ea, eb;
    uint remainder = dml_significand(ma, ea), divisor = dml_significand(mb, eb);
    for (int steps = ea - eb; steps > 0; --steps) {  // at most 277
        if (remainder >= divisor) remainder -= divisor;
        remainder <<= 1;
    }
    if (remainder >= divisor) remainder -= divisor;
    uint sign = ua & 0x80000000u;
    if (remainder == 0u) return uintBitsToFloat(sign);
    // remainder 2^(eb - 23), below 2^(eb + 1): exact as a normal or a subnormal number
    int top = findMSB(remainder);
    int exponent = eb - 23 + top;  // of the leading one
    if (exponent >= -126)
        return uintBitsToFloat(sign | (uint(exponent + 127) << 23) | ((remainder << uint(23 - top)) & 0x7FFFFFu));
    int scale = eb + 126;  // a subnormal: remainder 2^(eb - 23) in units of 2^-149, exactly
    return uintBitsToFloat(sign | (scale >= 0 ? remainder << uint(scale) : remainder >> uint(-scale)));
}

#if defined(DENORMALS_EXACT)
// x * 2^64 from its bits, exactly, for |x| < 2^64: a subnormal becomes a normal number.
float dml_scaled_up(float x) {
    uint bits = floatBitsToUint(x);
    uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude == 0u) return x;
    if (magnitude >= 0x00800000u) return uintBitsToFloat(bits + (64u << 23));
    int exponent;
    uint significand = dml_significand(magnitude, exponent);
    return uintBitsToFloat((bits & 0x80000000u) | (uint(exponent + 191) << 23) | (significand & 0x7FFFFFu));
}

// x * 2^-64, rounded once (to a subnormal too), for a zero or a normal x.
float dml_scaled_down(float x) {
    uint bits = floatBitsToUint(x);
    uint biased = (bits >> 23) & 0xFFu;
    if (biased == 0u) return x;
    if (biased > 64u) return uintBitsToFloat(bits - (64u << 23));
    return dml_rounded(bits & 0x80000000u, int(biased) - 191, ((bits & 0x7FFFFFu) | 0x800000u) << 1, false);
}

// a + b, correctly rounded, subnormals included, on a device that flushes them. Operands
// of 2^-103 or more (biased exponent 24) are multiples of 2^-126 and so is their sum: zero,
// normal or infinite, the hardware's. An operand of 2^64 or more dwarfs a subnormal other
// (below half its ULP) and cannot cancel into the subnormals. Otherwise both lie below
// 2^64: scaled by 2^64 they are normal multiples of 2^-85, and their sum, where the true
// sum is subnormal, is below 2^-62 and so exact; scaled back, it is rounded once.
float dml_add(float a, float b) {
    if (dml_isnan(a) || dml_isnan(b)) return dml_nan_of(a, b);
    uint biased_a = (floatBitsToUint(a) >> 23) & 0xFFu, biased_b = (floatBitsToUint(b) >> 23) & 0xFFu;
    if (min(biased_a, biased_b) >= 24u || max(biased_a, biased_b) >= 191u) return dml_hardware_add(a, b);
    return dml_scaled_down(dml_hardware_add(dml_scaled_up(a), dml_scaled_up(b)));
}

// a * b, correctly rounded, subnormals included, on a device that flushes them: normal
// operands with a normal product (or an overflow) are the hardware's; otherwise the
// significands are multiplied in integers (48 bits) and rounded once.
float dml_mul(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    uint biased_a = (ua >> 23) & 0xFFu, biased_b = (ub >> 23) & 0xFFu;
    if (biased_a != 0u && biased_b != 0u && biased_a != 255u && biased_b != 255u && biased_a + biased_b >= 129u)
        return dml_hardware_mul(a, b);
    uint sign = (ua ^ ub) & 0x80000000u;
    uint ma = ua & 0x7FFFFFFFu, mb = ub & 0x7FFFFFFFu;
    if (ma > 0x7F800000u || mb > 0x7F800000u) return dml_nan_of(a, b);
    if (ma == 0x7F800000u || mb == 0x7F800000u)  // infinity: NaN times zero, else infinite
        return uintBitsToFloat(ma == 0u || mb == 0u ? 0x7FC00000u : sign | 0x7F800000u);
    if (ma == 0u || mb == 0u) return uintBitsToFloat(sign);
    int ea, eb;
    uint sa = dml_significand(ma, ea), sb = dml_significand(mb, eb);
    uint high, low;
    umulExtended(sa, sb, high, low);  // in [2^46, 2^48)
    uint carry = high >> 15;  // 1 when the product of the significands is 2 or more
    uint shift = 22u + carry;  // keep 25 bits
    uint quotient = (high << (32u - shift)) | (low >> shift);
    return dml_rounded(sign, ea + eb + int(carry), quotient, (low & ((1u << shift) - 1u)) != 0u);
}
#else
float dml_add(float a, float b) {
    return dml_hardware_add(a, b);
}

float dml_mul(float a, float b) {
    return dml_hardware_mul(a, b);
}
#endif

float dml_sub(float a, float b) {
    return dml_add(a, dml_neg(b));
}

// Rounding an FP32 number to an integral value, on its bits: exact, and a subnormal never
// reaches hardware that might flush it (floor(-1e-40) is -1 on every device). NaN and
// infinities pass through; |x| of 2^23 or more is integral already.
float dml_trunc(float x) {
    uint bits = floatBitsToUint(x);
    uint biased = (bits >> 23) & 0xFFu;
    if (biased >= 150u) return x;
    if (biased < 127u) return uintBitsToFloat(bits & 0x80000000u);
    return uintBitsToFloat(bits & ~((1u << (150u - biased)) - 1u));
}

bool dml_has_fraction(float x) {
    uint bits = floatBitsToUint(x);
    uint biased = (bits >> 23) & 0xFFu;
    if (biased >= 150u) return false;
    if (biased < 127u) return (bits & 0x7FFFFFFFu) != 0u;
    return (bits & ((1u << (150u - biased)) - 1u)) != 0u;
}

// The integral values below stay within +-2^24 and are normal or zero: the hardware's +-1
// on them is exact everywhere.
float dml_floor(float x) {
    float whole = dml_trunc(x);
    return (floatBitsToUint(x) >> 31) != 0u && dml_has_fraction(x) ? whole - 1.0 : whole;
}

float dml_ceil(float x) {
    float whole = dml_trunc(x);
    return (floatBitsToUint(x) >> 31) == 0u && dml_has_fraction(x) ? whole + 1.0 : whole;
}

// Nearest integral value; a tie goes to the even one, or away from zero.
float dml_round_integral(float x, bool ties_away) {
    uint bits = floatBitsToUint(x);
    uint biased = (bits >> 23) & 0xFFu;
    if (biased >= 150u) return x;
    uint sign = bits & 0x80000000u;
    if (biased < 126u) return uintBitsToFloat(sign);  // |x| < 1/2
    uint shift = 150u - biased;  // 1 to 24: the fraction's bits
    uint significand = (bits & 0x7FFFFFu) | 0x800000u;
    uint whole = significand >> shift;
    uint rest = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (ties_away || (whole & 1u) == 1u))) whole += 1u;
    return uintBitsToFloat(floatBitsToUint(float(whole)) | sign);  // whole <= 2^24: exact
}

float dml_round_half_even(float x) { return dml_round_integral(x, false); }
float dml_round_half_away(float x) { return dml_round_integral(x, true); }

// Wrapping integer arithmetic on 64-bit two's-complement values (low word, high word): the
// element-wise family's integers keep the low bits of their data type's width when stored.
uvec2 dml_wide_add(uvec2 a, uvec2 b) {
    uint carry;
    uint low = uaddCarry(a.x, b.x, carry);
    return uvec2(low, a.y + b.y + carry);
}

uvec2 dml_wide_sub(uvec2 a, uvec2 b) {
    uint borrow;
    uint low = usubBorrow(a.x, b.x, borrow);
    return uvec2(low, a.y - b.y - borrow);
}

uvec2 dml_wide_mul_low(uvec2 a, uvec2 b) {
    uint high, low;
    umulExtended(a.x, b.x, high, low);
    return uvec2(low, high + a.x * b.y + a.y * b.x);  // the product modulo 2^64
}

bool dml_wide_less(uvec2 a, uvec2 b) {
    return int(a.y) < int(b.y) || (a.y == b.y && a.x < b.x);
}

// base^exponent modulo 2^64, by repeated squaring (the stored result keeps the data type's
// low bits, as repeated multiplication would). An exponent is at most 32 bits wide. A
// negative exponent gives the integer part of 1 / base^n: 1 for base 1, +-1 for base -1, else
// 0 (0 for base 0 too, where NumPy raises).
uvec2 dml_wide_pow(uvec2 base, uvec2 exponent) {
    if (int(exponent.y) < 0) {
        if (base == uvec2(1u, 0u)) return base;
        if (base == uvec2(0xFFFFFFFFu)) return (exponent.x & 1u) == 1u ? base : uvec2(1u, 0u);
        return uvec2(0u);
    }
    uvec2 result = uvec2(1u, 0u);
    for (uint n = exponent.x; n != 0u; n >>= 1) {
        if ((n & 1u) != 0u) result = dml_wide_mul_low(result, base);
        base = dml_wide_mul_low(base, base);
    }
    return result;
}

// Division of integers of at most 32 bits (held wide), on their magnitudes in 32-bit unsigned
// arithmetic (|INT32_MIN| fits), exact: the quotient truncated toward zero; the remainder with
// the dividend's sign, or with the divisor's where `floored` (Python's %). By zero: 0.
uvec2 dml_wide_negated(uvec2 a) {
    return dml_wide_sub(uvec2(0u), a);
}

uint dml_wide_magnitude(uvec2 a) {
    return int(a.y) < 0 ? dml_wide_negated(a).x : a.x;
}

uvec2 dml_wide_signed(uint magnitude, bool negative) {
    uvec2 value = uvec2(magnitude, 0u);
    return negative ? dml_wide_negated(value) : value;
}

uvec2 dml_wide_div(uvec2 a, uvec2 b) {
    if (b == uvec2(0u)) return uvec2(0u);
    return dml_wide_signed(dml_wide_magnitude(a) / dml_wide_magnitude(b), (int(a.y) < 0) != (int(b.y) < 0));
}

uvec2 dml_wide_mod(uvec2 a, uvec2 b, bool floored) {
    if (b == uvec2(0u)) return uvec2(0u);
    uvec2 remainder = dml_wide_signed(dml_wide_magnitude(a) % dml_wide_magnitude(b), int(a.y) < 0);
    if (floored && remainder != uvec2(0u) && (int(remainder.y) < 0) != (int(b.y) < 0)) {
        remainder = dml_wide_add(remainder, b);
    }
    return remainder;
}

// Halved toward zero: a negative odd value rounds up, as C's / 2 does.
uvec2 dml_wide_half(uvec2 a) {
    uvec2 biased = int(a.y) < 0 ? dml_wide_add(a, uvec2(1u, 0u)) : a;
    return uvec2((biased.x >> 1) | (biased.y << 31), uint(int(biased.y) >> 1));
}

// Integer data types compute exactly: values are 64-bit two's-complement integers held as
// (low word, high word), every operation's result is saturated to the data type's range,
// and no value passes through a float. Mixed with an FP32 number (a scalar), the number's
// bits are decoded in integer arithmetic, so subnormals count on every device.
#if defined(DTYPE_INT32) || defined(DTYPE_INT16) || defined(DTYPE_INT8)
#define INTEGER_SIGNED
#define WIDE_MAX uvec2(ELEMENT_MASK >> 1, 0u)
#define WIDE_MIN uvec2(~(ELEMENT_MASK >> 1), 0xFFFFFFFFu)
#elif defined(DTYPE_UINT32) || defined(DTYPE_UINT16) || defined(DTYPE_UINT8)
#define WIDE_MAX uvec2(ELEMENT_MASK, 0u)
#define WIDE_MIN uvec2(0u)
#endif

// An input's stored bits as a wide integer, by its own width and signedness.
uvec2 signed_to_wide(uint bits, uint element_bits) {
    int value = int(bits << (32u - element_bits)) >> (32u - element_bits);  // sign-extend
    return uvec2(uint(value), value < 0 ? 0xFFFFFFFFu : 0u);
}

#if defined(WIDE_MAX)
uvec2 wide_sub(uvec2 a, uvec2 b) {
    uint borrow;
    uint low = usubBorrow(a.x, b.x, borrow);
    return uvec2(low, a.y - b.y - borrow);
}

bool wide_less(uvec2 a, uvec2 b) {
    return int(a.y) < int(b.y) || (a.y == b.y && a.x < b.x);
}

uvec2 wide_saturate(uvec2 value) {
    return wide_less(value, WIDE_MIN) ? WIDE_MIN : wide_less(WIDE_MAX, value) ? WIDE_MAX : value;
}

uint from_wide(uvec2 value) {
    return value.x & ELEMENT_MASK;  // in range: every operation saturates
}

uvec2 dml_wide_mul(uvec2 a, uvec2 b) {
    uint high, low;
#if defined(INTEGER_SIGNED)
    int signed_high, signed_low;
    imulExtended(int(a.x), int(b.x), signed_high, signed_low);
    high = uint(signed_high);
    low = uint(signed_low);
#else
    umulExtended(a.x, b.x, high, low);
    high = min(high, 0x7FFFFFFFu);  // above 2^63 is above the range anyway
#endif
    return wide_saturate(uvec2(low, high));
}

// floor(f) for the FP32 number with bits f, clamped to +-2^40 (beyond every element, so
// results still saturate as they should), and whether f has a fractional part.
uvec2 wide_floor(uint f, out bool fractional) {
    uint magnitude = f & 0x7FFFFFFFu;
    uint biased = magnitude >> 23;
    uint significand = (magnitude & 0x7FFFFFu) | 0x800000u;
    uvec2 whole;  // trunc(|f|)
    fractional = false;
    if (biased >= 167u) {  // 2^40 and beyond, infinities included
        whole = uvec2(0u, 0x100u);
    } else if (biased < 127u) {
        whole = uvec2(0u);
        fractional = magnitude != 0u;
    } else if (biased < 150u) {  // 1 <= |f| < 2^23: a fraction may remain
        uint dropped = 150u - biased;
        whole = uvec2(significand >> dropped, 0u);
        fractional = (significand & ((1u << dropped) - 1u)) != 0u;
    } else if (biased == 150u) {
        whole = uvec2(significand, 0u);
    } else {  // 2^24 <= |f| < 2^40: shift left by 1..16 across the word boundary
        uint shift = biased - 150u;
        whole = uvec2(significand << shift, significand >> (32u - shift));
    }
    if ((f >> 31) == 0u) return whole;
    return wide_sub(wide_sub(uvec2(0u), whole), uvec2(fractional ? 1u : 0u, 0u));
}

bool wide_is_nan(uint f) {
    return (f & 0x7FFFFFFFu) > 0x7F800000u;
}

// x - f rounded toward zero, saturated (NaN gives 0; scalars are finite by validation).
uvec2 dml_wide_sub_float(uvec2 x, uint f) {
    if (wide_is_nan(f)) return uvec2(0u);
    bool fractional;
    uvec2 n = wide_sub(x, wide_floor(f, fractional));  // x - f = n - frac(f), 0 <= frac(f) < 1
    if (fractional && wide_less(uvec2(0u), n)) n = wide_sub(n, uvec2(1u, 0u));
    return wide_saturate(n);
}

// Comparisons of an integer with an FP32 number, exact (false for NaN): for an integer x,
// x > f exactly when x > floor(f), and x < f when x < floor(f), or x == floor(f) and f
// has a fraction.
bool dml_wide_gt_float(uvec2 x, uint f) {
    bool fractional;
    return !wide_is_nan(f) && wide_less(wide_floor(f, fractional), x);
}

bool dml_wide_lt_float(uvec2 x, uint f) {
    bool fractional;
    uvec2 below = wide_floor(f, fractional);
    return !wide_is_nan(f) && (wide_less(x, below) || (x == below && fractional));
}

bool dml_wide_ge_float(uvec2 x, uint f) {
    return !wide_is_nan(f) && !dml_wide_lt_float(x, f);
}

bool dml_wide_le_float(uvec2 x, uint f) {
    return !wide_is_nan(f) && !dml_wide_gt_float(x, f);
}

// An FP32 number as the output's integer type: truncated toward zero, saturated (NaN: 0).
uvec2 dml_wide_from_float(uint f) {
    if (wide_is_nan(f)) return uvec2(0u);
    bool fractional;
    uvec2 n = wide_floor(f, fractional);
    if (fractional && (f >> 31) != 0u) n = wide_sub(n, uvec2(0xFFFFFFFFu));  // floor + 1: toward zero
    return wide_saturate(n);
}
#endif
