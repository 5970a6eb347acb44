"""The toy course's hooks (`[tool.coursekit] hooks`, see coursekit.course): one variable for the grading kernel, no
data folders, no needs beyond the Python modules the kit finds itself."""

KERNEL_VARIABLE = "TOYCOURSE_KERNEL"


def kernel_environment():
    return {KERNEL_VARIABLE: "set by toycourse.kit"}


def data_folders():
    return []
