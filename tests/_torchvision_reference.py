"""torchvision as the reference of the TorchVision-style API's tests, where it is installed.

The wheels that torchvision publishes for Linux are CUDA builds; with a CPU-only torch their
compiled operators (nms, roi_align ...) cannot load, and importing torchvision fails while it
registers those operators' shape functions. The transforms need none of them: here the failed
registrations are skipped, so the pure-Python transforms import and run.
"""
import importlib.util
import warnings


def import_torchvision():
    """torchvision, or None where it is not installed."""
    if importlib.util.find_spec("torchvision") is None:
        return None
    import torch.library as library
    real = library.register_fake

    def lenient(name, *args, **kwargs):
        def register(f):
            try:
                return real(name, *args, **kwargs)(f)
            except RuntimeError:  # the operator itself did not load (a CUDA build on a CPU torch)
                return f
        return register

    library.register_fake = lenient
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torchvision
            from torchvision.transforms import v2  # noqa: F401
    finally:
        library.register_fake = real
    return torchvision
