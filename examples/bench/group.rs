//! What a group is made of: throughput scenarios (the first is the
//! baseline), measures taken once on the group's data, and comparisons with
//! goals (printed as met / not met, never asserted).

use std::sync::Arc;

use serde_json::Value as Json;

use crate::control::Conn;
use crate::pipe::Gen;

/// Appends ONE operation (one command, or a whole MULTI..EXEC block) to the
/// buffer and returns how many replies it produces.
pub(crate) type OpFn = Arc<dyn Fn(&mut Gen, &mut Vec<u8>) -> usize + Send + Sync>;
/// Runs ONE operation as a request/reply conversation on the client's own
/// connection (a conditional protocol such as WATCH .. EXEC with retries,
/// which cannot be pre-encoded); returns how many attempts it took (1 = no
/// retry). Error replies fail the scenario, as in pipelined runs.
pub(crate) type DialogFn =
    Arc<dyn Fn(&mut Gen, &mut redis::Connection) -> Result<u64, String> + Send + Sync>;
pub(crate) type SetupFn = Box<dyn Fn(&mut Conn) -> Result<(), String>>;
type ScenarioSetupFn = Box<dyn Fn(&mut Conn) -> Result<Load, String>>;
type MeasureFn = Box<dyn Fn(&mut Conn) -> Result<Measured, String>>;

/// What each client of a run does.
pub(crate) enum Load {
    /// Pipelines of `pipeline` pre-encoded operations.
    Pipelined(OpFn),
    /// One conversation after the other (the pipeline depth does not apply).
    Dialog(DialogFn),
}

pub(crate) fn op(f: impl Fn(&mut Gen, &mut Vec<u8>) -> usize + Send + Sync + 'static) -> Load {
    Load::Pipelined(Arc::new(f))
}

pub(crate) fn dialog(
    f: impl Fn(&mut Gen, &mut redis::Connection) -> Result<u64, String> + Send + Sync + 'static,
) -> Load {
    Load::Dialog(Arc::new(f))
}

/// What a scenario or measure stands for, for plots (`role` in the JSON).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Role {
    /// The plain command the recipe is built on: the floor.
    Plain,
    /// A `recipes` command.
    Module,
    /// The recipe as a Lua script (EVALSHA).
    Lua,
    /// The recipe as MULTI/EXEC.
    Multi,
    /// The recipe's own way otherwise (its read, its data layout).
    Recipe,
    /// The gem redis_counters' way (its algorithm, its layout).
    Gem,
    /// A diagnostic or reference figure.
    Reference,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Plain => "plain",
            Role::Module => "module",
            Role::Lua => "lua",
            Role::Multi => "multi",
            Role::Recipe => "recipe",
            Role::Gem => "gem",
            Role::Reference => "reference",
        }
    }
}

/// Values a plot puts on an axis or in a legend (`params` in the JSON).
pub(crate) type Params = Vec<(&'static str, Json)>;

pub(crate) struct Scenario {
    /// Short name, used in comparisons and tables.
    pub id: &'static str,
    pub role: Role,
    /// What one operation is.
    pub label: String,
    /// Module commands it needs; unknown -> the scenario is skipped.
    pub requires: Vec<&'static str>,
    /// Overrides of the global client count / pipeline depth (slow commands).
    pub clients: Option<usize>,
    pub pipeline: Option<usize>,
    pub params: Params,
    /// Runs before each run (after FLUSHALL + group setup in reset groups):
    /// loads scripts, fills data, and returns the operation generator.
    pub setup: ScenarioSetupFn,
}

impl Scenario {
    pub fn new(
        id: &'static str,
        role: Role,
        label: impl Into<String>,
        setup: impl Fn(&mut Conn) -> Result<Load, String> + 'static,
    ) -> Scenario {
        Scenario {
            id,
            role,
            label: label.into(),
            requires: vec![],
            clients: None,
            pipeline: None,
            params: vec![],
            setup: Box::new(setup),
        }
    }

    /// A scenario of one command per operation with nothing to set up:
    /// `args` writes the command.
    pub fn command(
        id: &'static str,
        role: Role,
        label: impl Into<String>,
        args: impl Fn(&mut Gen, &mut Vec<u8>) + Clone + Send + Sync + 'static,
    ) -> Scenario {
        Scenario::new(id, role, label, move |_| {
            let args = args.clone();
            Ok(op(move |g, out| {
                args(g, out);
                1
            }))
        })
    }

    pub fn requires(mut self, commands: &[&'static str]) -> Scenario {
        self.requires = commands.to_vec();
        self
    }

    /// `clients` connections at pipeline depth `pipeline` instead of the settings'.
    pub fn clients(mut self, clients: usize, pipeline: Option<usize>) -> Scenario {
        self.clients = Some(clients);
        self.pipeline = pipeline;
        self
    }

    pub fn param(mut self, name: &'static str, value: impl Into<Json>) -> Scenario {
        self.params.push((name, value.into()));
        self
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    Bytes,
    /// bytes per stored value (shown with a decimal)
    BytesPerValue,
    Micros,
    Millis,
    /// one figure over another (shown with three decimals)
    Ratio,
}

impl Unit {
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Bytes => "B",
            Unit::BytesPerValue => "B/value",
            Unit::Micros => "us",
            Unit::Millis => "ms",
            Unit::Ratio => "x",
        }
    }
}

/// A measure's outcome.
pub(crate) struct Measured {
    pub value: f64,
    /// Printed next to the value; lines after the first below it.
    pub note: String,
    /// The group file's entry for this measure when it is a whole experiment
    /// with figures of its own (the latency group's scenarios).
    pub json: Option<Json>,
}

impl From<(f64, String)> for Measured {
    fn from((value, note): (f64, String)) -> Measured {
        Measured {
            value,
            note,
            json: None,
        }
    }
}

pub(crate) struct Measure {
    pub id: &'static str,
    pub role: Role,
    pub label: String,
    pub unit: Unit,
    pub requires: Vec<&'static str>,
    pub params: Params,
    pub run: MeasureFn,
}

impl Measure {
    pub fn new(
        id: &'static str,
        role: Role,
        label: impl Into<String>,
        unit: Unit,
        run: impl Fn(&mut Conn) -> Result<Measured, String> + 'static,
    ) -> Measure {
        Measure {
            id,
            role,
            label: label.into(),
            unit,
            requires: vec![],
            params: vec![],
            run: Box::new(run),
        }
    }

    pub fn requires(mut self, commands: &[&'static str]) -> Measure {
        self.requires = commands.to_vec();
        self
    }

    pub fn param(mut self, name: &'static str, value: impl Into<Json>) -> Measure {
        self.params.push((name, value.into()));
        self
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

impl Goal {
    pub fn met(self, x: f64) -> bool {
        match self {
            Goal::AtLeast(g) => x >= g,
            Goal::AtMost(g) => x <= g,
        }
    }
}

/// `a / b` (throughput: per-round ratio, then median; measures: value ratio),
/// or, with `b: None`, the measure `a` itself against an absolute goal.
pub(crate) struct Compare {
    pub a: &'static str,
    pub b: Option<&'static str>,
    pub goal: Option<Goal>,
}

pub(crate) fn cmp(a: &'static str, b: &'static str, goal: Option<Goal>) -> Compare {
    Compare {
        a,
        b: Some(b),
        goal,
    }
}

/// The measure `a` against an absolute goal.
pub(crate) fn goal(a: &'static str, goal: Goal) -> Compare {
    Compare {
        a,
        b: None,
        goal: Some(goal),
    }
}

pub(crate) struct Group {
    pub id: &'static str,
    pub title: String,
    /// true: FLUSHALL + group setup before every run (write groups);
    /// false: once at the start of the group (read groups on big data).
    pub reset_each: bool,
    pub setup: Option<SetupFn>,
    /// The first scenario is the baseline.
    pub scenarios: Vec<Scenario>,
    /// Measured once, after the throughput rounds, on the group's data.
    pub measures: Vec<Measure>,
    pub compares: Vec<Compare>,
}

impl Group {
    /// A group with nothing in it yet.
    pub fn new(id: &'static str, title: impl Into<String>) -> Group {
        Group {
            id,
            title: title.into(),
            reset_each: false,
            setup: None,
            scenarios: vec![],
            measures: vec![],
            compares: vec![],
        }
    }
}
