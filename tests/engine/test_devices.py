"""ggml's device registry, read through our ctypes bindings."""

from app.engine.llama.devices import devices, gpu_memory_bytes, supports_gpu_offload


def test_the_cpu_is_listed_with_its_memory():
    cpu = [d for d in devices() if d.kind == "CPU"]
    assert len(cpu) == 1 and cpu[0].memory_total > 1_000_000_000


def test_vram_is_reported_only_where_a_gpu_is():
    if supports_gpu_offload() and any(d.kind == "GPU" for d in devices()):
        assert gpu_memory_bytes() > 0
    else:
        assert gpu_memory_bytes() is None
