"""ggml's device registry, read through our ctypes bindings."""

from app.engine.llama.devices import device_report, devices, offload_support


def test_the_cpu_is_listed_with_its_memory():
    cpu = [d for d in devices() if d.kind == "CPU"]
    assert len(cpu) == 1 and cpu[0].memory_total > 1_000_000_000


def test_vram_is_reported_only_where_a_gpu_is():
    report = device_report()
    assert report.offload == offload_support()
    if report.offload.gpu and any(d.kind in ("GPU", "IGPU") for d in devices()):
        assert report.gpu_total > 0 and 0 < report.gpu_free <= report.gpu_total
    else:
        assert report.gpu_total is None and report.gpu_free is None
