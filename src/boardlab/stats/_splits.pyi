# The C kernel of drawn permutation splits (_splits.c): its two functions, typed for mypy.
from array import array

def yuen_statistics(
    values: array[float],
    squares: array[float],
    sums: array[float],
    square_sums: array[float],
    n: int,
    trim: float,
    n_condition: int,
    state: tuple[int, ...],
    count: int,
) -> tuple[bytes, tuple[int, ...]]: ...
def yuen_arm_statistics(
    values: array[float],
    n: int,
    trim: float,
    n_condition: int,
    by_coins: bool,
    state: tuple[int, ...],
    count: int,
) -> tuple[bytes, tuple[int, ...]]: ...
