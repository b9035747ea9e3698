"""Every shipped variant of the row ops at its entry's own width, on the GPU, at rows it serves beside
its entry's own: widths whose rows are 16-byte aligned let Triton stage loads in shared memory
(asynchronous copies), which test_shipped_variants.py's width that no block divides does not, so a
variant can fit there and not launch here. The H100's RMSNorm backward tuned at one row took
327,768 bytes of shared memory at 2 rows and more of 4096 columns (over the 227 KiB a program may
take), and the public path ran PyTorch's backward after the launch failed; the GPU tests passed at
4099 columns. Two rows (a decode entry's next shape) and 37 (several row blocks), poisoned outputs,
against the op's float64 reference."""
import pytest

from kernel_check import check_shipped_variant, shipped_entries, variants_of
from test_shipped_variants import ROW_OPS

pytestmark = pytest.mark.gpu


def widths_and_variants() -> list:
    """(op, dtype, variant, dtypes, width) of each dynamic row-op variant at its entry's width."""
    found = set()
    for entry in shipped_entries(ROW_OPS):
        if not entry.twin:
            found.update((*row, entry.shape["N"]) for row in variants_of([entry]))
    return sorted(found, key=lambda row: (*row[:3], row[3] or "", row[4]))


@pytest.mark.parametrize("op, dtype, variant, dtypes, width", widths_and_variants())
def test_variant_runs_at_its_entrys_width(device, op, dtype, variant, dtypes, width):
    for seed, rows in enumerate((2, 37)):
        check_shipped_variant(op, dtype, variant, dtypes, {"M": rows, "N": width}, device, seed)
