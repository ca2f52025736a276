"""agf_lib.validation: one message style, TypeError for a wrong type and ValueError for a wrong value."""

import math

import numpy as np
import pytest

from agf_lib.validation import as_float_array, check_bool, check_centred, check_int, check_positive, real_array


@pytest.mark.parametrize("value, error, message", [
    ("2", TypeError, "^H must be an integer, got str"),
    (2.0, TypeError, "^H must be an integer, got float"),
    (True, TypeError, "^H must be an integer, got bool"),
    (0, ValueError, "^H must be an integer >= 1, got 0"),
])
def test_check_int(value, error, message):
    with pytest.raises(error, match=message):
        check_int(value, "H")
    assert check_int(np.int64(3), "H") == 3 and type(check_int(np.int64(3), "H")) is int


@pytest.mark.parametrize("value, error, message", [
    (None, TypeError, "^eta must be a real number, got NoneType"),
    (False, TypeError, "^eta must be a real number, got bool"),
    (0.0, ValueError, "^eta must be a finite positive number, got 0.0"),
    (-1, ValueError, "^eta must be a finite positive number, got -1.0"),
    (math.nan, ValueError, "^eta must be a finite positive number, got nan"),
    (math.inf, ValueError, "^eta must be a finite positive number, got inf"),
])
def test_check_positive(value, error, message):
    with pytest.raises(error, match=message):
        check_positive(value, "eta")
    assert check_positive(math.inf, "t_end", finite=False) == math.inf
    with pytest.raises(ValueError, match="^t_end must be a positive number, got nan"):
        check_positive(math.nan, "t_end", finite=False)


def test_arrays():
    np.testing.assert_array_equal(real_array([[1, 2], [3, 4]], "X"), [[1.0, 2.0], [3.0, 4.0]])
    assert real_array([1j, 2], "u", complex_ok=True).dtype == complex
    with pytest.raises(TypeError, match="^X must be an array of real numbers, got a ragged nested sequence"):
        real_array([[1, 2], [3]], "X")
    with pytest.raises(TypeError, match="^X must hold real numbers, got dtype complex128"):
        real_array([1j], "X")
    with pytest.raises(TypeError, match="^X must be a numpy array or torch tensor, got dict"):
        as_float_array({}, "X")
    with pytest.raises(ValueError, match="^X contains NaN or infinite values"):
        real_array([1.0, math.nan], "X")


def test_bool_and_centred():
    assert check_bool(np.bool_(True), "flag") is True
    with pytest.raises(TypeError, match="^flag must be True or False, got int"):
        check_bool(1, "flag")
    with pytest.raises(ValueError, match="^x must be nonzero"):
        check_centred(np.zeros(3), "x")
    with pytest.raises(ValueError, match=r"^x must be centred \(sum zero\)"):
        check_centred(np.array([1.0, 0.0, 0.0]), "x")
