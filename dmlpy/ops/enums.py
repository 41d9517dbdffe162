"""DirectML's enumerations that operator descs take, named as DirectML.h names them without
the DML_ prefix and with DirectML's values, so a desc holds exactly what DirectML would."""

from __future__ import annotations

import enum


class ReduceFunction(enum.Enum):
    """DML_REDUCE_FUNCTION: what DML_OPERATOR_REDUCE computes over the reduced axes."""

    ARGMAX = 0
    ARGMIN = 1
    AVERAGE = 2
    L1 = 3
    L2 = 4
    LOG_SUM = 5
    LOG_SUM_EXP = 6
    MAX = 7
    MIN = 8
    MULTIPLY = 9
    SUM = 10
    SUM_SQUARE = 11


class MatrixTransform(enum.Enum):
    """DML_MATRIX_TRANSFORM: how GEMM reads a matrix."""

    NONE = 0
    TRANSPOSE = 1


class AxisDirection(enum.Enum):
    """DML_AXIS_DIRECTION: the order an operator walks an axis in (ARGMIN/ARGMAX ties, TOP_K)."""

    INCREASING = 0
    DECREASING = 1


class RoundingMode(enum.Enum):
    """DML_ROUNDING_MODE: how ELEMENT_WISE_ROUND breaks a fraction."""

    HALVES_TO_NEAREST_EVEN = 0
    TOWARD_ZERO = 1
    TOWARD_INFINITY = 2  # the nearest integer, halves away from zero


class IsInfinityMode(enum.Enum):
    """DML_IS_INFINITY_MODE: which infinities ELEMENT_WISE_IS_INFINITY reports."""

    EITHER = 0
    POSITIVE = 1
    NEGATIVE = 2


class RandomGeneratorType(enum.Enum):
    """DML_RANDOM_GENERATOR_TYPE: the generator RANDOM_GENERATOR runs."""

    PHILOX_4X32_10 = 0  # Philox 4x32-10 (Salmon et al., SC11): a 128-bit counter, a 64-bit key
