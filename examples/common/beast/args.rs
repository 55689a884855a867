//! The command line of examples/dnn_conv.rs (beast.rs runs what it asks for).

use tune::results::Named;
use tune::{Error, Result, Value};

use super::super::cases::dnn_conv::{Check, DnnConv, Layer, Pass, ALEXNET, VGG16};
use super::super::Budget;
use super::SMALL;

/// The command line of examples/dnn_conv.rs.
#[derive(Clone, Debug)]
pub struct Args {
    /// `alexnet`, `vgg16` or `small`.
    pub net: String,
    /// The batch size, if not the network's.
    pub batch: Option<usize>,
    /// Only these layers (by name), if any.
    pub layers: Vec<String>,
    /// The budget of each layer.
    pub budget: Budget,
    /// The layer of the pruning table, if one is asked for.
    pub prune: Option<String>,
    /// With `prune`: how many configurations rejected after compiling to measure anyway.
    pub measure_rejected: usize,
    /// The pass tuned: the forward pass, or backward-data as the forward pass of
    /// [`Layer::backward_data`].
    pub backward_data: bool,
    /// The pass tuned is backward-filter (the filters' gradient, `--pass backward-filter`).
    pub backward_filter: bool,
    /// Validate only the tuned configuration, once, after the search (`--validate best`),
    /// instead of every evaluation (`every`, the default).
    pub validate_best: bool,
    /// Configurations measured first on every layer whose space has them (`--start
    /// BM=64,BN=64,...`, repeatable): a previous run's winners, confirmed.
    pub starts: Vec<Named<Value>>,
    /// Parameters held at one value each (`--pin ALGO=1`): the space searched is the part
    /// of each layer's that has them (a path alone, say).
    pub pins: Vec<(String, usize)>,
}

impl Args {
    /// Parses the example's arguments (after `--backend`).
    ///
    /// # Errors
    /// An unknown option or a value that is not a number.
    pub fn parse(args: &[String]) -> Result<Args> {
        let mut out = Args {
            net: "alexnet".into(),
            batch: None,
            layers: Vec::new(),
            budget: Budget::from_env(40, 40.0),
            prune: None,
            measure_rejected: 8,
            backward_data: false,
            backward_filter: false,
            validate_best: false,
            starts: Vec::new(),
            pins: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| arg_error(a, "needs a value".into()))
            };
            let number = |v: String| {
                v.parse::<f64>()
                    .map_err(|_| arg_error(a, format!("takes a number, not `{v}`")))
            };
            match a.as_str() {
                "--net" => out.net = value()?,
                "--batch" => out.batch = Some(number(value()?)? as usize),
                "--layers" => out.layers = value()?.split(',').map(str::to_string).collect(),
                "--evals" => out.budget.evaluations = number(value()?)? as u64,
                "--seconds" => out.budget.seconds = number(value()?)?,
                "--prune" => out.prune = Some(value()?),
                "--measure-rejected" => out.measure_rejected = number(value()?)? as usize,
                "--pass" => {
                    (out.backward_data, out.backward_filter) = match value()?.as_str() {
                        "forward" => (false, false),
                        "backward-data" => (true, false),
                        "backward-filter" => (false, true),
                        other => {
                            return Err(arg_error(
                                a,
                                format!(
                                    "takes forward, backward-data or backward-filter, not \
                                     `{other}`"
                                ),
                            ))
                        }
                    }
                }
                "--start" => out.starts.push(parse_config(a, &value()?)?),
                "--pin" => out.pins.extend(parse_pins(a, &value()?)?),
                "--validate" => {
                    out.validate_best = match value()?.as_str() {
                        "every" => false,
                        "best" => true,
                        other => {
                            return Err(arg_error(a, format!("takes every or best, not `{other}`")))
                        }
                    }
                }
                other => {
                    return Err(arg_error(
                        other,
                        "unknown argument; see the top of examples/dnn_conv.rs".into(),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// The network's name in the results: `alexnet`, or `alexnet-bwd-data` for
    /// backward-data, `alexnet-bwd-filter` for backward-filter.
    pub fn label(&self) -> String {
        match (self.backward_data, self.backward_filter) {
            (true, _) => format!("{}-bwd-data", self.net),
            (_, true) => format!("{}-bwd-filter", self.net),
            _ => self.net.clone(),
        }
    }

    /// The layers to run: for backward-data, the forward layers that compute it (those
    /// at stride 1; strided ones are skipped, and named in the error if none is left).
    ///
    /// # Errors
    /// An unknown network or layer name, or no layer left for the pass.
    pub fn selected(&self) -> Result<Vec<Layer>> {
        let forward = self.forward_layers()?;
        if !self.backward_data {
            return Ok(forward);
        }
        let (served, strided): (Vec<Layer>, Vec<Layer>) = forward
            .into_iter()
            .partition(|l| l.backward_data().is_some());
        if served.is_empty() {
            let names: Vec<&str> = strided.iter().map(|l| l.name).collect();
            return Err(arg_error(
                "--pass",
                format!(
                    "backward-data of {} is a transposed convolution (stride over 1), which \
                     this kernel does not compute; pick stride-1 layers",
                    names.join(", ")
                ),
            ));
        }
        Ok(served.iter().filter_map(Layer::backward_data).collect())
    }

    /// The forward layers named by the arguments.
    fn forward_layers(&self) -> Result<Vec<Layer>> {
        let all: Vec<Layer> = match self.net.as_str() {
            "alexnet" => ALEXNET.to_vec(),
            "vgg16" => VGG16.to_vec(),
            "small" => SMALL.to_vec(),
            other => {
                return Err(arg_error(
                    "--net",
                    format!("unknown network `{other}`; expected alexnet, vgg16 or small"),
                ))
            }
        };
        let all: Vec<Layer> = all
            .into_iter()
            .map(|l| self.batch.map_or(l, |b| l.batch(b)))
            .collect();
        let wanted: Vec<&String> = self.layers.iter().chain(&self.prune).collect();
        if wanted.is_empty() {
            return Ok(all);
        }
        wanted
            .iter()
            .map(|w| {
                all.iter()
                    .find(|l| l.name == w.as_str())
                    .copied()
                    .ok_or_else(|| {
                        let names: Vec<&str> = all.iter().map(|l| l.name).collect();
                        arg_error(
                            "--layers",
                            format!(
                                "no layer `{w}` in {}; it has {}",
                                self.net,
                                names.join(", ")
                            ),
                        )
                    })
            })
            .collect()
    }

    pub(super) fn study(&self, layer: Layer) -> DnnConv {
        DnnConv {
            check: match (self.net.as_str(), self.validate_best) {
                ("small", false) => Check::Host,
                (_, true) => Check::Deferred,
                _ => Check::Kernel,
            },
            pass: match self.backward_filter {
                true => Pass::BackwardFilter,
                false => Pass::Forward,
            },
            pins: self.pins.clone(),
            ..DnnConv::new(layer)
        }
    }
}

/// `--pin`'s pairs, each value a count (no parameter takes a negative one).
fn parse_pins(option: &str, text: &str) -> Result<Vec<(String, usize)>> {
    parse_config(option, text)?
        .0
        .into_iter()
        .map(|(name, v)| match v {
            Value::Int(i) if i >= 0 => Ok((name, i as usize)),
            other => Err(arg_error(
                option,
                format!("takes counts, not {other:?} for {name}"),
            )),
        })
        .collect()
}

/// A configuration written `NAME=integer,NAME=integer,...` (as the `best:` lines print it).
fn parse_config(option: &str, text: &str) -> Result<Named<Value>> {
    let pairs = text
        .split([',', ' '])
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (name, v) = pair.split_once('=').ok_or_else(|| {
                arg_error(option, format!("takes NAME=value pairs, not `{pair}`"))
            })?;
            let v = v.parse::<i64>().map_err(|_| {
                arg_error(
                    option,
                    format!("takes integer values, not `{v}` for {name}"),
                )
            })?;
            Ok((name.to_string(), Value::Int(v)))
        });
    Ok(Named(pairs.collect::<Result<_>>()?))
}

/// A command-line argument that is wrong: `option`, and what is wrong with it.
pub(super) fn arg_error(option: &str, reason: String) -> Error {
    Error::InvalidParam {
        name: option.to_string(),
        reason,
    }
}
