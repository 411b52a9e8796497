"""fn.io.file.read: the bytes of the files that the input names (as DALI's ResNet-50 example's
dali_proxy path reads the files a torch Dataset lists; that path: tests/test_pytorch_proxy.py)."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_io_file_read_gives_the_bytes_of_the_files_the_input_names(tmp_path, dtype):
    contents = [b"first file", bytes(range(256)), b""]
    paths = []
    for k, data in enumerate(contents):
        (tmp_path / f"{k}.bin").write_bytes(data)
        paths.append(np.frombuffer(str(tmp_path / f"{k}.bin").encode(), dtype))

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        return fn.io.file.read(fn.external_source(source=lambda: paths))

    (out,) = pipe().run()
    assert out.dtype == types.UINT8
    assert [out.at(i).tobytes() for i in range(3)] == contents


@pytest.mark.parametrize("paths, error", [([np.frombuffer(b"/no/such/file", np.int8)], "no/such/file"),
                                          ([np.zeros(3, np.float32)], "Unexpected input data type")])
def test_io_file_read_errors(paths, error):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        return fn.io.file.read(fn.external_source(source=lambda: paths))

    with pytest.raises(RuntimeError, match=error):
        pipe().run()
