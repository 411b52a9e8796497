"""Experimental APIs of DALI 2.x: the dynamic mode (``experimental.dynamic``, operators called
eagerly on tensors and batches) and the TorchVision-style transforms built on it
(``experimental.torchvision``, which needs torch). Neither is imported here: each is imported
when used."""
