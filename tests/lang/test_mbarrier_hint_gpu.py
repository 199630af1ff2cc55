"""mbarrier.try_wait_parity_hint (Mbarrier.try_wait with suspend_time_ns) on a real GPU: the
kernel of tests/lang/test_mbarrier_hint.py gives the simulator's answer."""
import pytest

torch = pytest.importorskip("torch")

from test_mbarrier_hint import hinted_poll  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("hint", [1, 500, 100000])
def test_hinted_try_wait_on_the_gpu(hint):
    out = torch.full((32,), -1, dtype=torch.int32, device="cuda")
    hinted_poll[1, 32](out, hint)
    torch.cuda.synchronize()
    assert out.tolist() == [1] * 32
