"""Host-side helpers that Triton keeps under `triton.tools` (`tensor_descriptor.TensorDescriptor`)."""
