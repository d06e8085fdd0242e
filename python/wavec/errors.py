"""The exceptions of the wavec package. Every one derives from WavecError; those raised for a
failed runtime call also carry the runtime's status name (`status`) and its message
(wave_last_error(), the text of the exception)."""


class WavecError(Exception):
    """Base class of every error the wavec package raises."""


class WavecNotFoundError(WavecError, FileNotFoundError):
    """The wavec compiler (or the runtime library, or a C compiler) could not be found."""


class CompileError(WavecError):
    """wavec (or the C compiler building the stub) failed; the text holds its diagnostics."""

    def __init__(self, message, command=None, output=""):
        super().__init__(message)
        self.command = command
        self.output = output


class RuntimeCallError(WavecError):
    """A call into libwave_runtime or a generated stub failed."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class InvalidArgumentError(RuntimeCallError, ValueError):
    """WAVE_ERROR_INVALID_ARGUMENT: a wrong dtype, rank, shape or layout, a NULL tensor..."""


class UnsupportedShapeError(RuntimeCallError, ValueError):
    """WAVE_ERROR_UNSUPPORTED_SHAPE: the sizes break an `assume` of the kernel."""


class DeviceError(RuntimeCallError):
    """No such device, no driver, or no code object for the device."""


class ArgumentError(WavecError, TypeError):
    """A Python-side argument problem found before any runtime call (wrong number of arguments,
    a tensor on another device than the launch's, an object that is no tensor)."""


_BY_STATUS = {
    "WAVE_ERROR_INVALID_ARGUMENT": InvalidArgumentError,
    "WAVE_ERROR_UNSUPPORTED_SHAPE": UnsupportedShapeError,
    "WAVE_ERROR_NO_DEVICE": DeviceError,
    "WAVE_ERROR_DRIVER_NOT_FOUND": DeviceError,
    "WAVE_ERROR_NOT_FOUND": DeviceError,
}


def error_for_status(status, message):
    cls = _BY_STATUS.get(status, RuntimeCallError)
    return cls(status, f"{message} [{status}]")
