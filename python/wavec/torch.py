"""PyTorch integration: a compiled kernel as a torch.library custom operator.

    import wavec, wavec.torch
    m = wavec.compile("samples/copy/copy.wave", targets=["sm_90"])
    copy = wavec.torch.register(m.copy, name="mylib::copy")
    copy(a, b)                                   # writes b, like m.copy(a, b)
    torch.compile(lambda a, b: copy(a, b))(a, b)  # the op is one node of the graph

The operator has the kernel's parameters in order (tensors and scalars); the kernel's outputs are
declared as mutated arguments (Tensor(a!)) and the op returns nothing, as the C API does. Its
fake (meta) implementation does nothing: the outputs already exist with their shapes, so
torch.compile can trace through it. It runs on torch's current stream of the tensors' device."""

import torch

_SCALAR_SCHEMA = {"f16": "float", "bf16": "float", "f32": "float", "f64": "float", "i1": "bool"}


def schema_of(kernel):
    """The torch operator schema of a wavec Kernel: "(Tensor a, Tensor(a0!) b) -> ()"."""
    parts = []
    for i, a in enumerate(kernel.params):
        if a.kind == "pointer":
            parts.append(f"Tensor(a{i}!) {a.name}" if a.is_output else f"Tensor {a.name}")
        else:
            parts.append(f"{_SCALAR_SCHEMA.get(a.type, 'int')} {a.name}")
    return f"({', '.join(parts)}) -> ()"


def register(kernel, name=None, device_types=None):
    """Registers `kernel` (an attribute of a wavec.Module) as the custom operator `name`
    ("namespace::op"; default "wavec::<kernel>") and returns it (also reachable as
    torch.ops.namespace.op)."""
    if name is None:
        name = f"wavec::{kernel.name}"
    if "::" not in name:
        name = f"wavec::{name}"
    mutated = tuple(a.name for a in kernel.params if a.kind == "pointer" and a.is_output)

    def implementation(*args, **kwargs):
        kernel(*args, **kwargs)

    op = torch.library.custom_op(name, implementation, mutates_args=mutated,
                                 device_types=device_types, schema=schema_of(kernel))

    @op.register_fake
    def _fake(*args, **kwargs):
        return None

    return op
