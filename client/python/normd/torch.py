"""normd.torch.RMSNorm: a drop-in for torch.nn.RMSNorm whose forward runs on a normd server.

    norm = normd.torch.RMSNorm(4096, eps=1e-6, client=normd.Client("normd:50051"))
    norm.load_state_dict(model.norm.state_dict())        # same parameter: `weight`
    with torch.inference_mode():
        y = norm(x)                                       # x: [..., 4096], any device

Inference only: normd computes no gradients, so forward refuses to run where autograd would need
them (grad mode on and the input or weight requiring grad); run it under torch.no_grad() or
torch.inference_mode(). normd normalizes over the last dimension only, so `normalized_shape` is one
dimension. With eps=None the eps is torch.finfo(x.dtype).eps, as torch.nn.RMSNorm does. The weight
is registered with normd once and sent by id; changing it in place (load_state_dict, an optimizer
step) is noticed through torch's version counter and registers the new values.
"""

import numbers
from typing import Optional

import torch

import normd

_Shape = (int, tuple, list, torch.Size)


class RMSNorm(torch.nn.Module):
    def __init__(self, normalized_shape, eps: Optional[float] = None,
                 elementwise_affine: bool = True, device=None, dtype=None, *,
                 client: "normd.Client", weight_offset: float = 0.0):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (int(normalized_shape),)
        normalized_shape = tuple(normalized_shape)
        if len(normalized_shape) != 1:
            raise ValueError(f"normalized_shape: {list(normalized_shape)}; normd normalizes over "
                             "the last dimension only, so give one dimension")
        if client is None:
            raise ValueError("client: a normd.Client is required")
        self.normalized_shape = normalized_shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight_offset = weight_offset
        self.client = client
        if elementwise_affine:
            self.weight = torch.nn.Parameter(
                torch.ones(normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            # normd always applies a weight: ones (float32 travels with any input dtype).
            self.register_buffer("_ones", torch.ones(normalized_shape, dtype=torch.float32),
                                 persistent=False)

    @classmethod
    def from_torch(cls, module: torch.nn.Module, client: "normd.Client",
                   weight_offset: float = 0.0) -> "RMSNorm":
        """The normd twin of a torch.nn.RMSNorm (or any module with normalized_shape, eps and
        weight), sharing its weight tensor."""
        twin = cls(module.normalized_shape, module.eps, module.weight is not None,
                   client=client, weight_offset=weight_offset)
        if module.weight is not None:
            twin.weight = module.weight
        return twin

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None):
        """RMSNorm of x; with `residual`, (y, x + residual) as normd's fused residual add."""
        weight = self.weight if self.weight is not None else self._ones
        if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
            raise RuntimeError(
                "normd.torch.RMSNorm is inference only (normd computes no gradients): call it "
                "under torch.no_grad() or torch.inference_mode()")
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        return self.client.rms_norm(x, weight, eps=eps, residual=residual,
                                    weight_offset=self.weight_offset)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, target={self.client.target!r}")
