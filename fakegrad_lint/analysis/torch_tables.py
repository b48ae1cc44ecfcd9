"""Torch's semantics as data: what each qualified name does for the analysis.

Everything the interpreter knows about torch (and the few third-party libraries
that build torch modules) lives here: which callables open a fake region, which
switch grad mode or dispatch off, which make tensors or modules, which return
``self``, which only read metadata, which transforms keep the real parameters of
the module they are given. Names are fully qualified after import resolution, so
a local name that merely looks like torch's is never matched. The interpreter
looks names up here; it has no torch knowledge of its own in branches.
"""

from __future__ import annotations

# Words that must appear in code (not only in a comment) for a fake region to exist:
# the prefilter's byte scan and the analysis' hot-path tests both read this one list.
ENTRY_WORDS = ("FakeTensorMode", "detect_fake_mode", "tracing_mode")

FAKE_TENSOR_MODE = frozenset(
    {
        "torch._subclasses.fake_tensor.FakeTensorMode",
        "torch._subclasses.FakeTensorMode",
    }
)
FAKE_COPY_MODE = frozenset(
    {"torch._subclasses.fake_tensor.FakeCopyMode", "torch._subclasses.FakeCopyMode"}
)
DETECT_FAKE_MODE = frozenset({"torch._guards.detect_fake_mode"})
UNSET_FAKE = frozenset(
    {
        "torch._subclasses.fake_tensor.unset_fake_temporarily",
        "torch._subclasses.unset_fake_temporarily",
        "torch.utils._mode_utils.no_dispatch",
        "torch.utils._python_dispatch._disable_current_modes",
        "torch._C._DisableTorchDispatch",
        "torch._subclasses.fake_tensor.disable_fake_tensor_mode_tracing",
    }
)
GRAD_OFF = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
    }
)
GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})
# What each grad-mode context constructor does to grad mode: (with no argument,
# {constant first argument (or `mode=`): grad mode}). "on"/"off" is the grad mode
# inside; None means "needs the argument". An argument that is not a known constant
# counts as "off" (grad may be off, so no gradient claim holds).
# inference_mode(False) re-enables grad (c10::InferenceMode(false) sets grad mode on).
GRAD_MODE_ARGUMENT = "mode"
_GRAD_MODE_SPELLINGS = {
    "no_grad": ("off", {}),
    "enable_grad": ("on", {}),
    "inference_mode": ("off", {True: "off", False: "on"}),
    "set_grad_enabled": (None, {True: "on", False: "off"}),
}
GRAD_MODE_CONTEXTS = {
    prefix + name: meaning
    for name, meaning in _GRAD_MODE_SPELLINGS.items()
    for prefix in ("torch.", "torch.autograd.", "torch.autograd.grad_mode.")
}
# the grad-mode constructors that also switch inference mode (its flag is what grad mode
# is off for): inside inference mode, enable_grad / set_grad_enabled(True) turn grad mode
# on but no op records a graph; inference_mode(False) leaves inference mode
INFERENCE_MODE = frozenset(k for k in GRAD_MODE_CONTEXTS if k.endswith(".inference_mode"))
# grad-mode constructors that switch grad mode when called, not when entered
# (torch's set_grad_enabled.__init__ sets it; __exit__ restores what it was before
# the call): `torch.set_grad_enabled(False)` as a statement turns grad off from there on
GRAD_MODE_SET_ON_CALL = frozenset(k for k in GRAD_MODE_CONTEXTS if k.endswith(".set_grad_enabled"))
# plain functions that set grad mode from their first argument
GRAD_MODE_SETTERS = frozenset({"torch._C._set_grad_enabled", "torch.autograd.grad_mode._set_grad_enabled"})
NULL_CONTEXT = frozenset({"contextlib.nullcontext"})
# contexts that swallow the exceptions of the classes they are given (a strict mode's
# AssertionError raised in them is caught: the program goes on)
SUPPRESSING_CONTEXTS = frozenset({"contextlib.suppress", "pytest.raises"})
NULL_CONTEXT_ENTER_RESULT = frozenset({"contextlib.nullcontext"})  # its first argument is what `as` binds
EXIT_STACK = frozenset({"contextlib.ExitStack", "contextlib.AsyncExitStack"})
# `except ImportError:` around imports of these (and the standard library) never runs:
# the program is analysed as it runs, with torch installed
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
ALWAYS_IMPORTABLE = frozenset({"torch", "functorch", "torchgen"})  # (the torch wheel ships all three)
# names whose value is known wherever the program runs
# torch layers whose output shape is known from their input's (one input, constant
# constructor arguments): "same" (elementwise, normalisation), "linear", "embedding"
SHAPE_LAYERS = {**dict.fromkeys(("ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Dropout", "Identity", "LeakyReLU", "ELU",
                                 "Mish", "Hardswish", "Softplus", "LayerNorm", "RMSNorm"), "same"),
                "Linear": "linear", "Embedding": "embedding"}
# factories whose result is floating (the default dtype unless dtype= says otherwise)
FLOAT_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.empty", "torch.zeros", "torch.ones"})
DTYPE_SIZES = {"torch.float32": 4, "torch.float": 4, "torch.float64": 8, "torch.double": 8, "torch.float16": 2,
               "torch.half": 2, "torch.bfloat16": 2}
PROGRAM_ARGV = frozenset({"sys.argv"})  # the command line of the program run with no arguments
KNOWN_CONSTANTS = {"typing.TYPE_CHECKING": False, "typing_extensions.TYPE_CHECKING": False}
# the Pythons the linted program can run on (the linter's own range): a comparison of
# `sys.version_info` with a tuple is known when it holds (or fails) over all of them
PYTHON_VERSIONS = ((3, 10, 0), (3, 99, 99))
# exception classes whose handler catches the AssertionError a strict mode raises
CATCHES_ASSERTION = frozenset({"AssertionError", "Exception", "BaseException"})
# ExitStack methods that unwind what it entered (its callbacks run, the contexts are left)
EXIT_STACK_CLOSE = frozenset({"close", "__exit__"})
CONTEXT_MANAGER = frozenset({"contextlib.contextmanager"})
PATCH_OBJECT = frozenset({"unittest.mock.patch.object", "mock.patch.object"})
MAKE_FX = frozenset({"torch.fx.experimental.proxy_tensor.make_fx", "torch.fx.experimental.make_fx"})
DEEPCOPY = frozenset({"copy.deepcopy"})
# dataclasses' helpers over an instance's fields: a dict (field name -> value) or a
# tuple of the values, deep-copied; `replace` makes a new instance with some fields changed
DATACLASS_ASDICT = frozenset({"dataclasses.asdict"})
DATACLASS_ASTUPLE = frozenset({"dataclasses.astuple"})
DATACLASS_REPLACE = frozenset({"dataclasses.replace"})
NAMED_TUPLE_BASES = frozenset({"typing.NamedTuple", "typing_extensions.NamedTuple"})  # `_replace(**kw)`
# shallow copies: a new object holding the same parameters
SHALLOW_COPY = frozenset({"copy.copy"})
# functions that change a module in place and return that same module (its
# parameters, old and new, are real when it is): weight and spectral norm,
# parametrizations, pruning
RETURNS_MODULE_GIVEN = frozenset(
    {
        "torch.nn.utils.weight_norm",
        "torch.nn.utils.weight_norm.weight_norm",
        "torch.nn.utils.remove_weight_norm",
        "torch.nn.utils.spectral_norm",
        "torch.nn.utils.spectral_norm.spectral_norm",
        "torch.nn.utils.remove_spectral_norm",
        "torch.nn.utils.parametrizations.weight_norm",
        "torch.nn.utils.parametrizations.spectral_norm",
        "torch.nn.utils.parametrizations.orthogonal",
        "torch.nn.utils.parametrize.register_parametrization",
        "torch.nn.utils.parametrize.remove_parametrizations",
        "torch.nn.utils.prune.identity",
        "torch.nn.utils.prune.random_unstructured",
        "torch.nn.utils.prune.l1_unstructured",
        "torch.nn.utils.prune.random_structured",
        "torch.nn.utils.prune.ln_structured",
        "torch.nn.utils.prune.remove",
    }
)
# wrappers that hold a deep copy of the module they are given (its own parameters,
# real outside a region, fake when copied under an allowing mode)
MODULE_DEEPCOPYING_WRAPPERS = frozenset({"torch.optim.swa_utils.AveragedModel"})
FUNCTIONAL_CALL = frozenset(
    {"torch.func.functional_call", "torch.nn.utils.stateless.functional_call", "torch._functorch.functional_call.functional_call"}
)
PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
AUTOGRAD_BACKWARD = frozenset({"torch.autograd.backward"})
AUTOGRAD_GRAD = frozenset({"torch.autograd.grad"})
FROM_REAL_TENSOR_ATTR = ("from_tensor", "from_real_tensor")
# FakeTensorMode methods a program may take as values and call later
MODE_METHOD_NAMES = frozenset({"__enter__", "__exit__", "from_tensor"})

# torch.* callables that are not tensor ops: no operand dispatches on a tensor.
TORCH_NON_OPS_PREFIX = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.testing.",
    "torch.jit.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.optim.",
    "torch.nn.init.calculate",
    "torch.fx.",
    # whole-program tools: their results are programs and handles, not tensors
    "torch.export.",
    "torch.onnx.",
    "torch.package.",
    "torch.hub.",
    "torch.profiler.",
    "torch.library.",
    "torch.overrides.",
)
TORCH_NON_OPS = frozenset(
    {
        "torch.Size",
        "torch.device",
        "torch.dtype",
        "torch.manual_seed",
        "torch.set_default_device",
        "torch.set_default_dtype",
        "torch.get_default_dtype",
        "torch.is_tensor",
        "torch.is_grad_enabled",
        "torch.is_floating_point",
        "torch.numel",
        "torch.compile",
        "torch.Generator",
        "torch.typename",
        "torch.get_default_device",
        "torch.set_printoptions",
        "torch.use_deterministic_algorithms",
        "torch.set_num_threads",
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_value_",
    }
)
# torch.* functions whose result carries no autograd history from their inputs.
NON_DIFFERENTIABLE_FUNCS = frozenset(
    {
        "torch.zeros_like",
        "torch.ones_like",
        "torch.empty_like",
        "torch.full_like",
        "torch.rand_like",
        "torch.randn_like",
        "torch.randint_like",
        "torch.argmax",
        "torch.argmin",
        "torch.argsort",
        "torch.eq",
        "torch.ne",
        "torch.lt",
        "torch.gt",
        "torch.le",
        "torch.ge",
        "torch.isnan",
        "torch.isinf",
        "torch.isfinite",
        "torch.sign",
        "torch.equal",
        "torch.allclose",
        "torch.isclose",
        "torch.nonzero",
        "torch.count_nonzero",
    }
)
# Tensor methods and attributes that read metadata only (no dispatch on the data).
METADATA_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "stride",
        "storage_offset",
        "element_size",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "get_device",
        "type",
        "is_leaf",
        "has_names",
        "is_shared",
        "is_pinned",
        "data_ptr",
        "untyped_storage",
        "requires_grad_",
        "retain_grad",
        "register_hook",
        "__len__",
    }
)
METADATA_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "requires_grad",
        "is_leaf",
        "layout",
        "is_cuda",
        "is_meta",
        "is_sparse",
        "is_quantized",
        "names",
        "grad_fn",
        "_version",
        "itemsize",
        "nbytes",
    }
)
NON_DIFFERENTIABLE_METHODS = frozenset(
    {
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_tensor",
        "argmax",
        "argmin",
        "argsort",
        "long",
        "int",
        "bool",
        "short",
        "byte",
        "char",
        "eq",
        "ne",
        "lt",
        "gt",
        "le",
        "ge",
        "isnan",
        "isinf",
        "nonzero",
        "sign",
        "zero_",
        # torch.distributions: a draw by `sample()` carries no history (rsample() does)
        "sample",
        "sample_n",
    }
)
# torch.distributions classes (`Normal(loc, scale)`, `Categorical(logits=...)`): a
# distribution is a differentiable function of its tensor parameters (its constructor
# runs ops on them, `rsample`/`log_prob`/`entropy` are ops on them); the subpackages
# listed hold no distributions
DISTRIBUTIONS_PREFIX = "torch.distributions."
DISTRIBUTIONS_NON_CLASSES = frozenset({"constraints", "transforms", "constraint_registry", "kl", "utils"})


# --------------------------------------------------------------- entry points
# make_fx under every public spelling (functorch re-exports it)
MAKE_FX = MAKE_FX | frozenset(
    {
        "functorch.make_fx",
        "functorch.experimental.make_fx",
        "torch._functorch.python_key.make_fx",
    }
)
DETECT_FAKE_MODE = DETECT_FAKE_MODE | frozenset({"torch._dynamo.utils.detect_fake_mode"})
IMPORT_MODULE = frozenset({"importlib.import_module"})
JSON_LOADS = frozenset({"json.loads"})  # of a constant text: the data it holds
JSON_LOAD = frozenset({"json.load"})  # of a project data file opened by a constant path
OPEN_FILE = frozenset({"builtins.open", "io.open"})
# `with torch.device("meta"):` builds modules and tensors on the meta device
DEVICE_CONTEXT = frozenset({"torch.device"})
STAR_EXPORTS = {
    "torch._subclasses.fake_tensor": ("FakeTensorMode", "FakeCopyMode", "unset_fake_temporarily"),
    "torch._subclasses": ("FakeTensorMode",),
    "torch.fx.experimental.proxy_tensor": ("make_fx",),
    "functorch": ("make_fx", "grad", "grad_and_value", "vmap", "jacrev", "jacfwd"),
}

# ------------------------------------------------------- Python's decorators
# decorators that leave the function callable as it was (flags aside)
TRANSPARENT_DECORATORS = frozenset(
    {
        "builtins.staticmethod",
        "builtins.classmethod",
        "builtins.property",
        "functools.cached_property",
        "functools.lru_cache",
        "functools.cache",
        "abc.abstractmethod",
        "typing.overload",
        "typing.final",
        "torch.compile",
        "torch.jit.ignore",
        "torch.jit.unused",
        "torch.compiler.disable",
        "torch._dynamo.disable",
    }
)
# custom autograd functions: `Cls.apply(*args)` runs `Cls.forward(ctx, *args)` (no ctx
# when the class defines `setup_context`) and records the class's backward
AUTOGRAD_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function",
                                     "torch.autograd.function.InplaceFunction"})

# decorators (bare or called with options) that memoise: a later call with equal
# arguments returns the first call's result object
MEMO_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})
# the methods functools' cache wrapper adds to a memoised function, by what they do to
# its cache: "clear" empties it (the next call with any arguments runs the body again),
# "keep" leaves it (`cache_info()`, `cache_parameters()` only report on it)
MEMO_FUNCTION_METHODS = {"cache_clear": "clear", "cache_info": "keep", "cache_parameters": "keep"}
STATIC_DECORATORS = frozenset({"builtins.staticmethod"})
CLASS_DECORATORS = frozenset({"builtins.classmethod"})
PROPERTY_DECORATORS = frozenset({"builtins.property", "functools.cached_property"})
# a non-data descriptor run once per instance: the first read stores its value in the
# instance's __dict__, which every later read finds first (the body never runs again)
CACHED_PROPERTY_DECORATORS = frozenset({"functools.cached_property"})
# functools.wraps(fn) returns a decorator that returns its argument
WRAPS = frozenset({"functools.wraps"})
UPDATE_WRAPPER = frozenset({"functools.update_wrapper"})
PARTIAL = frozenset({"functools.partial"})
# functools.singledispatch(f): calls dispatch on the type of the first argument to the
# implementations `@f.register` adds (singledispatchmethod: the argument after self)
SINGLEDISPATCH = frozenset({"functools.singledispatch"})
SINGLEDISPATCHMETHOD = frozenset({"functools.singledispatchmethod"})
DATACLASS = frozenset({"dataclasses.dataclass"})
# types.SimpleNamespace(**kw), argparse.Namespace(**kw): an object whose attributes are its keywords
SIMPLE_NAMESPACE = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
# inspect.signature(fn) of a function of the file or project: its `.parameters` (a
# mapping from each parameter's name, in order; a fixture runner reads them)
SIGNATURE = frozenset({"inspect.signature"})
# builtins and str methods that are pure functions of constants: folded by Python itself
PURE_BUILTINS = {"int": int, "float": float, "bool": bool, "str": str, "len": len}
PURE_STR_METHODS = frozenset({"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "startswith", "endswith",
                              "isdigit", "isnumeric", "isalpha", "replace", "split", "title", "removeprefix",
                              "removesuffix", "partition", "rpartition", "rsplit", "join", "format", "zfill",
                              "count", "find", "rfind", "isidentifier", "isupper", "islower", "swapcase",
                              "capitalize", "center", "ljust", "rjust"})
# Python's functions over iterables, by what their items are (the interpreter's
# ``iterable_call`` evaluates each kind; ``fn`` is called on the items as Python would):
#   "chain": the items of every argument       "chain_from": the items of the argument's items
#   "first": the items of the first argument   "second": the items of the second argument
#   "filter_fn": items of the second argument, ``fn`` (the first) called on them
#   "starmap": ``fn(*item)`` per item          "map": ``fn(a, b, ...)`` over zipped items
#   "reduce": ``fn(acc, item)``                "accumulate": ``fn(acc, item)`` (each partial result)
#   "zip": tuples of the arguments' items      "product": tuples of the arguments' items
#   "pairs": tuples of two items of the first  "repeat": the first argument itself
#   "tuples": tuples of items of the first (combinations, permutations)
#   "groupby": (key, items of the first) pairs "enumerate": (index, item) pairs
ITERABLE_FUNCS = {
    "builtins.map": "map",
    "builtins.filter": "filter_fn",
    "builtins.zip": "zip",
    "builtins.enumerate": "enumerate",
    "builtins.reversed": "first",
    "builtins.sorted": "first",
    "builtins.iter": "first",
    "functools.reduce": "reduce",
    "itertools.chain": "chain",
    "itertools.chain.from_iterable": "chain_from",
    "itertools.islice": "first",
    "itertools.cycle": "first",
    "itertools.compress": "first",
    "itertools.takewhile": "filter_fn",
    "itertools.dropwhile": "filter_fn",
    "itertools.filterfalse": "filter_fn",
    "itertools.starmap": "starmap",
    "itertools.accumulate": "accumulate",
    "itertools.zip_longest": "zip",
    "itertools.product": "product",
    "itertools.pairwise": "pairs",
    "itertools.repeat": "repeat",
    "itertools.combinations": "tuples",
    "itertools.combinations_with_replacement": "tuples",
    "itertools.permutations": "tuples",
    "itertools.groupby": "groupby",
    "itertools.tee": "tee",
    "more_itertools.flatten": "chain_from",
}
# operator module functions that are Python operators (on tensors: ops that dispatch)
OPERATOR_FUNCS = frozenset(
    "operator." + n for n in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "neg", "pos",
                              "abs", "iadd", "isub", "imul", "imatmul", "itruediv", "getitem")
)
# operator's getters: callables that read the named attributes (dotted paths) or items
# of their argument (several names: a tuple)
GETTERS = {"operator.attrgetter": "attr", "operator.itemgetter": "item"}
# operator.methodcaller(name, *args, **kwargs): a callable f with f(obj) = obj.name(*args, **kwargs)
METHOD_CALLERS = frozenset({"operator.methodcaller"})
# weakref.ref(obj): calling the reference gives obj while it is alive (else None)
WEAKREFS = frozenset({"weakref.ref", "weakref.ReferenceType"})
# executors and threads run the function they are given (a worker opening a region
# runs it with the caller's objects): submit(fn, *args) / map(fn, *its) / Thread(target=fn,
# args=...).start() call fn right there; a future's result() is fn's return value
EXECUTORS = frozenset({"concurrent.futures.ThreadPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor"})
THREADS = frozenset({"threading.Thread", "threading.Timer"})
# isinstance() answered from what a value is
TENSOR_CLASSES = frozenset({"torch.Tensor"})
PYTHON_TYPES = {"builtins.int": int, "builtins.float": float, "builtins.str": str, "builtins.bool": bool,
                "builtins.bytes": bytes, "builtins.type": type}
# mapping types: a dict value is one, a list, tuple, tensor or module is not
MAPPING_TYPES = frozenset({"builtins.dict", "collections.abc.Mapping", "collections.abc.MutableMapping",
                           "typing.Mapping", "typing.MutableMapping", "typing.Dict", "collections.OrderedDict"})
OBJECT_TYPES = frozenset({"builtins.object", "typing.Any"})
# generator types: a generator object is one; a tensor, module, constant, function or
# instance of a class of the project is not (a pytest-like runner tells fixtures apart)
GENERATOR_TYPES = frozenset({"types.GeneratorType", "collections.abc.Generator", "typing.Generator"})
ARGUMENT_PARSER = frozenset({"argparse.ArgumentParser"})
ARGPARSE_PARSE = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args"})
# environment reads with a default: the program's default configuration is taken to be
# the one that runs (the variable unset), as when the linted script is run as it is
ENV_READS_WITH_DEFAULT = frozenset({"os.environ.get", "os.getenv"})
DATACLASS_FIELD = frozenset({"dataclasses.field"})

# ------------------------------------------------------------ torch modules
# nn.Module methods that return the module itself (chainable); requires_grad_
# is handled on its own because it changes what the module brings.
MODULE_SELF_METHODS = frozenset(
    {
        "to", "cuda", "cpu", "xpu", "mps", "ipu", "float", "double", "half", "bfloat16",
        "train", "eval", "type", "share_memory", "apply", "requires_grad_",
    }
)
TENSOR_SELF_METHODS = frozenset({"requires_grad_"})
# nn.Module hook registration -> the attribute torch keeps them in; a module call runs
# the pre hooks as fn(module, args) and the forward hooks as fn(module, args, output)
# (on the module and on each submodule its forward calls)
# the method name a ``MethodRef`` to torch's own forward of a layer carries
# (``super().forward`` in a subclass of ``nn.Linear``): no user forward runs, nor hooks
TORCH_FORWARD = "<torch forward>"
# builtins that read an attribute by its name given as a string (`getattr(obj, "w", None)`)
ATTRIBUTE_READERS = frozenset({"getattr"})
MODULE_HOOK_REGISTRARS = {"register_forward_pre_hook": "_forward_pre_hooks", "register_forward_hook": "_forward_hooks"}
# nn.Module methods a program may take as a value (`fwd = model.forward`) and call later
MODULE_METHOD_NAMES = MODULE_SELF_METHODS | frozenset(
    {
        "forward", "__call__", "parameters", "named_parameters", "buffers", "named_buffers", "children",
        "named_children", "modules", "named_modules", "state_dict", "load_state_dict", "to_empty", "zero_grad",
        "register_buffer", "register_parameter", "add_module", "register_module", "get_submodule", "get_parameter",
    }
)
# methods that only torch.nn.Module (and its subclasses) has among the common types: a
# value the analysis cannot follow (a third-party call's result) on which one is called
# is a module (``ModuleVal.opaque``). Not ``parameters``/``named_parameters``/
# ``state_dict``/``buffers``/``to``/``cuda``/``train``/``eval`` (an ExportedProgram, an
# optimizer, a tensor, a dataset or a Lightning trainer has them too)
MODULE_ONLY_METHODS = frozenset(
    {"to_empty", "named_modules", "named_children", "register_forward_hook", "register_forward_pre_hook",
     "register_full_backward_hook", "register_full_backward_pre_hook", "get_submodule"}
)
# optimizer methods taken as values (`step = opt.step`)
# Optimizer hook registration -> the attribute torch keeps them in; `step()` runs the
# pre hooks as fn(optimizer, args, kwargs), then the update (and a closure passed to
# it), then the post hooks as fn(optimizer, args, kwargs)
OPTIMIZER_HOOK_REGISTRARS = {"register_step_pre_hook": "_optimizer_step_pre_hooks",
                             "register_step_post_hook": "_optimizer_step_post_hooks"}
OPTIMIZER_METHOD_NAMES = frozenset({"step", "zero_grad"}) | frozenset(OPTIMIZER_HOOK_REGISTRARS)
# module casts away from the default float32: every parameter is a new tensor, so
# under an allowing mode the module's parameters become the mode's fakes (a cast
# to the dtype it has, `.float()`, `.to("cpu")`, leaves them as they were)
MODULE_DTYPE_CASTS = frozenset({"double", "half", "bfloat16"})
NON_DEFAULT_FLOAT_DTYPES = frozenset(
    {"torch.float64", "torch.double", "torch.float16", "torch.half", "torch.bfloat16"}
)
MODULE_PARAM_ATTRS = frozenset(
    {"weight", "bias", "in_proj_weight", "in_proj_bias", "weight_ih_l0", "weight_hh_l0"}
)
# the tensors a torch layer's forward reads when set on it (parameters and buffers)
MODULE_STATE_ATTRS = MODULE_PARAM_ATTRS | frozenset({"running_mean", "running_var"})
PARAMLESS_MODULES = frozenset(
    {
        "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "Identity", "Flatten",
        "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "MSELoss",
        "CrossEntropyLoss", "L1Loss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "Softplus", "LeakyReLU",
        "ELU", "Hardtanh", "ReLU6", "Mish", "Hardswish", "Upsample", "PixelShuffle", "Module",
    }
)
# nn.ModuleDict / ParameterDict methods that view its entries
MODULE_MAPPING_VIEWS = frozenset({"items", "values", "keys"})
CONTAINER_MODULES = frozenset({"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
WEIGHT_AND_BIAS_MODULES = frozenset(
    {
        "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "Bilinear", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
        "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm",
    }
)
WEIGHT_ONLY_MODULES = frozenset({"Embedding", "EmbeddingBag", "PReLU"})
# torch.nn layers whose public bases are nn.Module only (their other bases are private:
# _ConvNd, _BatchNorm, ...): a layer built as one of them is an instance of no other
# public torch.nn class (a Conv2d is not a Linear)
KNOWN_LAYER_CLASSES = (WEIGHT_AND_BIAS_MODULES | WEIGHT_ONLY_MODULES | PARAMLESS_MODULES | CONTAINER_MODULES) - {"Module"}
NN_NON_MODULE_SUBPACKAGES = frozenset({"utils", "functional", "init", "parameter", "attention", "common_types"})
NN_NON_MODULE_CLASSES = frozenset({"Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer"})
NN_MODULE_BASE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})

# Transforms that return a module holding the real parameters of the one given
# (HAZARD 13); given a function they return something that calls it.
MODULE_KEEPING_TRANSFORMS = frozenset(
    {
        "torch.compile",
        "torch.fx.symbolic_trace",
        "torch.fx._symbolic_trace.symbolic_trace",
        "torch._dynamo.optimize",
    }
)
# torch.export.export(m, args): an ExportedProgram; `.module()` keeps m's parameters,
# calling the program fakifies them itself (HAZARD 14)
EXPORT = frozenset({"torch.export.export", "torch.export._trace._export"})
EXPORTED_PROGRAM_SELF_METHODS = frozenset({"run_decompositions"})
# skip_init(cls, *args, **kwargs) builds cls(*args, **kwargs) with real storage
SKIP_INIT = frozenset({"torch.nn.utils.skip_init", "torch.nn.utils.init.skip_init"})

# torch.func.stack_module_state(models) -> (params, buffers): new leaves stacked from the
# models' parameters, requiring grad as theirs do (an ensemble trained through vmap)
STACK_MODULE_STATE = frozenset({"torch.func.stack_module_state", "torch._functorch.functional_call.stack_module_state"})
# torch.func transforms: kind -> qualified names
FUNC_TRANSFORMS = {
    "grad": frozenset({"torch.func.grad", "functorch.grad", "torch._functorch.apis.grad", "torch._functorch.eager_transforms.grad"}),
    "grad_and_value": frozenset(
        {"torch.func.grad_and_value", "functorch.grad_and_value", "torch._functorch.apis.grad_and_value"}
    ),
    "jac": frozenset({"torch.func.jacrev", "torch.func.jacfwd", "functorch.jacrev", "functorch.jacfwd"}),
    "vmap": frozenset({"torch.func.vmap", "torch.vmap", "functorch.vmap", "torch._functorch.apis.vmap"}),
}
# torch.func.vjp(f, *primals) -> (f(*primals), vjp_fn): f runs on the primals right away;
# vjp_fn(cotangents) gives one gradient per primal (fake under a region, like grad's)
VJP = frozenset({"torch.func.vjp", "functorch.vjp", "torch._functorch.eager_transforms.vjp"})

# Third-party factories that return real modules with requires-grad parameters.
# (qualified prefix, how the rest of the name must look)
#   "lower": a lowercase function name right after the prefix (torchvision.models.resnet18)
#   "exact": the name itself
#   "loader": <Class>.from_pretrained / <Class>.from_config (transformers, diffusers)
MODULE_FACTORIES = (
    ("torchvision.models.", "lower"),
    ("timm.create_model", "exact"),
    ("timm.models.create_model", "exact"),
    ("transformers.", "loader"),
    ("diffusers.", "loader"),
)
LOADER_METHODS = frozenset({"from_pretrained", "from_config"})
# attribute names whose use can make a real requires-grad value whatever they are read on
# (the source gate: analysis/sources_gate.py)
SOURCE_ATTRS = frozenset({"requires_grad_", "to_empty", "create_model", "Parameter", "UninitializedParameter"}) | LOADER_METHODS

# A mode allows non-fake inputs when the keyword is True: FGL001 (silent); a
# strict mode crashes (FGL002). What a mode allows, by constructor keyword:
MODE_ALLOW_KEYWORD = "allow_non_fake_inputs"
MAKE_FX_ALLOW_KEYWORD = "_allow_non_fake_inputs"
MAKE_FX_FAKE_TRACING = frozenset({"fake", "symbolic"})

# Fields of the named tuples torch's ops return (`x.max(-1).values`, `torch.sort(x).indices`,
# `torch.linalg.qr(a).Q`): the tensor-valued fields carry the op's result (its graph);
# the index fields are integer tensors, outside any graph
TENSOR_TUPLE_FIELDS = frozenset({"values", "Q", "R", "U", "S", "Vh", "V", "L", "LU", "eigenvalues", "eigenvectors",
                                 "sign", "logabsdet", "solution", "mantissa"})
TENSOR_TUPLE_INDEX_FIELDS = frozenset({"indices", "pivots", "info", "exponent"})

# Fields of the output objects of library models (transformers' ModelOutput,
# diffusers' outputs): a module call's result read through them is the same result.
MODEL_OUTPUT_ATTRS = frozenset(
    {"logits", "loss", "last_hidden_state", "hidden_states", "pooler_output", "sample", "prediction_logits", "attentions"}
)

# Functions that call their first argument with the rest (the values are their own
# keywords, dropped from the call): torch.utils.checkpoint runs the block itself.
CALL_THROUGH = {
    "torch.utils.checkpoint.checkpoint": frozenset({"use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug"}),
}

# Functions that run a chain of modules on an input, each on the previous one's
# output (the values: the chain's position, the input's position and keyword, their own
# keywords): checkpoint_sequential runs every segment's forward under the current
# modes, as `functions(input)` would (a Sequential, or a list of modules in order).
CALL_CHAIN_THROUGH = {
    "torch.utils.checkpoint.checkpoint_sequential": (0, 2, "input", frozenset({"use_reentrant", "preserve_rng_state"})),
}

# Functions that read tensors from storage: called outside every fake region they
# make real tensors (in containers of unknown structure: values.RealTreeVal); under a
# mode, or with map_location="meta", not known here
TENSOR_LOADERS = frozenset({"torch.load", "safetensors.torch.load_file", "safetensors.torch.load"})
# methods of a mapping that give one of its values (a part of a loaded tree)
MAPPING_VALUE_METHODS = frozenset({"get", "pop", "__getitem__", "setdefault"})

# Attributes of torch's wrapper modules that give back the wrapped module
MODULE_WRAPPER_ATTRS = frozenset({"module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"})

# Module methods that run an op (detach) on every parameter: under a strict mode a
# real module's call crashes (state_dict() without keep_vars=True)
MODULE_DETACHING_METHODS = frozenset({"state_dict"})


# ------------------------------------------------------------ tensor shapes
# Shapes are known values where torch's rule is exact (a finding never rests on a
# guessed shape; an unknown one is None). Factories whose sizes are their leading
# positional ints (or one sequence of ints, or ``size=``):
SIZE_FACTORIES = frozenset(
    "torch." + n for n in ("randn", "rand", "zeros", "ones", "empty")
) | frozenset({"torch.full"})  # full(size, fill_value): the size is its first argument
# factories whose result is a new leaf tensor: it requires grad exactly when the call
# says so (``requires_grad=True``), whatever their other (unknown) arguments are
NEW_LEAF_FACTORIES = frozenset(
    "torch." + n for n in ("randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "arange",
                           "linspace", "logspace", "eye", "tensor", "normal", "bernoulli", "multinomial")
)
# torch functions and Tensor methods whose result has the shape of their first tensor
# operand (elementwise on one tensor, `*_like` factories, casts, copies, normalisations)
_SAME_SHAPE = (
    "clone", "detach", "contiguous", "float", "double", "half", "bfloat16", "to", "cuda", "cpu", "requires_grad_",
    "relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "square", "sin",
    "cos", "softmax", "log_softmax", "triu", "tril", "clamp", "clamp_", "sign", "zero_", "fill_", "exp_", "mul_", "add_",
    "masked_fill", "masked_fill_", "dropout", "type_as", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "layer_norm", "rms_norm", "normalize", "erf", "reciprocal", "floor", "ceil", "round",
    "isnan", "isinf", "logical_not", "bool", "long", "int",
)
SHAPE_SAME_METHODS = frozenset(_SAME_SHAPE)
SHAPE_SAME_FUNCS = frozenset("torch." + n for n in _SAME_SHAPE) | frozenset(
    "torch.nn.functional." + n for n in ("relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
                                         "dropout", "layer_norm", "rms_norm", "normalize", "leaky_relu", "elu")
)
# elementwise binary ops (methods and torch functions): operands broadcast
_BROADCAST = ("add", "sub", "mul", "div", "true_divide", "pow", "maximum", "minimum", "where", "eq", "ne", "lt", "gt",
              "le", "ge", "logical_and", "logical_or")
SHAPE_BROADCAST_METHODS = frozenset(_BROADCAST)
SHAPE_BROADCAST_FUNCS = frozenset("torch." + n for n in _BROADCAST)
SHAPE_RESHAPE_METHODS = frozenset({"view", "reshape"})
SHAPE_MATMUL = frozenset({"matmul", "mm", "bmm", "torch.matmul", "torch.mm", "torch.bmm"})
SHAPE_TRANSPOSE = frozenset({"transpose", "swapaxes", "torch.transpose"})
SHAPE_UNSQUEEZE = frozenset({"unsqueeze", "torch.unsqueeze"})
# Tensor reads answered from a known shape
SHAPE_READS = frozenset({"size", "dim", "ndimension", "numel", "nelement"})


# ------------------------------------------------------- library base classes
# Library classes whose behaviour the interpreter models, for their instances and for
# the file's subclasses of them (a method the subclass does not define is the
# library's): qualified name -> kind. "enum": class attributes are the members
# (singletons, `Cls(value)` / `Cls[name]` look one up); "testcase": unittest runs
# setUpClass, then per test_* method setUp, the test, tearDown and the cleanups;
# "fx_interpreter": `run(*args)` runs the module it was given; "fake_mode": an
# instance is a FakeTensorMode (`super().__init__(allow_non_fake_inputs=...)`).
LIBRARY_CLASSES = {
    **dict.fromkeys(("enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"), "enum"),
    **dict.fromkeys(("unittest.TestCase", "unittest.case.TestCase", "unittest.IsolatedAsyncioTestCase"), "testcase"),
    **dict.fromkeys(("torch.fx.Interpreter", "torch.fx.interpreter.Interpreter"), "fx_interpreter"),
    **dict.fromkeys(FAKE_TENSOR_MODE, "fake_mode"),
    **dict.fromkeys(("unittest.TestSuite", "unittest.suite.TestSuite"), "test_suite"),
    **dict.fromkeys(("unittest.TestLoader", "unittest.loader.TestLoader"), "test_loader"),
    **dict.fromkeys(("unittest.TextTestRunner", "unittest.runner.TextTestRunner"), "test_runner"),
    **dict.fromkeys(("threading.Thread",), "thread"),
    **dict.fromkeys(("threading.Timer",), "timer"),
}
# the stdlib entry points that call a function they are given, as data: the class's
# constructor signature (positional names, in order) naming the callable and its
# arguments. ``start()`` runs ``run()`` in a new thread (torch's modes are thread-local:
# it starts outside every region); the library's ``run()`` calls
# ``target(*args, **kwargs)``; ``join()`` waits for it (nothing more to model)
THREAD_SIGNATURES = {
    "thread": (("group", "target", "name", "args", "kwargs"), "target"),
    "timer": (("interval", "function", "args", "kwargs"), "function"),
}
# library classes whose own instances (not only subclasses') the interpreter models
LIBRARY_INSTANTIATED = frozenset({"fx_interpreter", "test_suite", "test_loader", "test_runner"})
# enum mixins whose members are not always truthy (an int or str value of 0 or "")
ENUM_VALUE_MIXINS = frozenset({"enum.IntEnum", "enum.StrEnum", "enum.IntFlag", "enum.Flag", "builtins.int", "builtins.str"})
# unittest's module-level entry points: run every TestCase of the module / load a suite
UNITTEST_MAIN = frozenset({"unittest.main", "unittest.main.main"})
UNITTEST_LOADERS = frozenset({"unittest.defaultTestLoader.loadTestsFromTestCase", "unittest.makeSuite",
                              "unittest.findTestCases"})
# TestCase methods that are context managers doing nothing to dispatch (subTest), and
# those that assert an exception (a strict mode's AssertionError raised in them is caught)
TESTCASE_NULL_CONTEXTS = frozenset({"subTest"})
TESTCASE_RAISES = frozenset({"assertRaises", "assertRaisesRegex"})
