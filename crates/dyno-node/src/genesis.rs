//! The shared genesis file and the leader schedule every node derives from it.
//!
//! ```toml
//! network = "devnet"        # a name; part of the genesis hash
//! seed = 1                  # account keys and the leader schedule derive from it
//! accounts = 1024           # funded accounts (keys derived from seed, as benchg's)
//! balance = 1000000000000   # starting balance of each
//! slot_ms = 1000            # slot length
//! genesis_time_ms = 1795000000000   # Unix ms at which slot 0 starts
//! max_block_txs = 20000     # most transactions in a block (optional, this default)
//!
//! [[validators]]
//! id = "n1"
//! stake = 100
//! ```
//!
//! The genesis hash is SHA-256 over a canonical encoding (fixed field order, strings
//! length-prefixed, integers little-endian, validators in file order): two files that
//! differ in any field, or in the order of validators, are different networks.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use dyno_txn::bank::{fund_initial_accounts, Genesis as Accounts};
use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::block::MAX_LEADER_LEN;
use crate::error::{invalid, parse_toml, Error, Result};
use crate::hash::Hash;

/// Longest slot: the schedule's nanosecond arithmetic must not overflow, and a slot of
/// more than a day is a mistake, not a network.
pub const MAX_SLOT_MS: u64 = 86_400_000;
/// Latest genesis time (Unix ms, the year 2255): its nanoseconds fit a u64 with room
/// for decades of slots after it.
pub const MAX_GENESIS_TIME_MS: u64 = 9_000_000_000_000;

/// Most accounts a genesis may fund: every node derives each account's key when it loads
/// the genesis (about 20 us apiece), so a million is a start of seconds, while a value a
/// typo makes (a trillion) would hang every node of the network before it says anything.
pub const MAX_ACCOUNTS: usize = 1 << 20;

/// Most transactions in a block when the genesis does not say.
pub const DEFAULT_MAX_BLOCK_TXS: u32 = 20_000;
/// The largest `max_block_txs` a genesis may set: a full block must fit a peer frame
/// of a few hundred MiB at most.
pub const MAX_MAX_BLOCK_TXS: u32 = 1_000_000;

fn default_max_block_txs() -> u32 {
    DEFAULT_MAX_BLOCK_TXS
}

/// One validator of the genesis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validator {
    /// Node id (what its config's `id` says and its peers call it).
    pub id: String,
    /// Stake: its share of leader slots is stake / total stake (0 = never leads).
    pub stake: u64,
}

/// The genesis file's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisFile {
    /// Network name.
    pub network: String,
    /// Seed of the account keys and the schedule.
    pub seed: u64,
    /// Funded accounts.
    pub accounts: usize,
    /// Starting balance of each account.
    pub balance: u64,
    /// Slot length, ms.
    pub slot_ms: u64,
    /// Start of slot 0, Unix ms.
    pub genesis_time_ms: u64,
    /// Most transactions in one block: every node of the network agrees on it, and a
    /// follower refuses a block above it (`too_many_txs`).
    #[serde(default = "default_max_block_txs")]
    pub max_block_txs: u32,
    /// The validators, in schedule order.
    pub validators: Vec<Validator>,
}

/// A loaded genesis: the file, its hash, and the funded accounts it implies.
#[derive(Debug, Clone)]
pub struct Genesis {
    /// The file's contents.
    pub file: GenesisFile,
    /// SHA-256 of the canonical encoding.
    pub hash: Hash,
    /// Keys and starting balances (the bank's genesis).
    pub accounts: std::sync::Arc<Accounts>,
    total_stake: u128,
    /// Each validator's block-signing public key, in file order.
    leader_keys: Vec<VerifyingKey>,
}

impl GenesisFile {
    /// Reads and validates a genesis file.
    pub fn from_file(path: &Path) -> Result<GenesisFile> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses and validates `text` (read from `path`, named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<GenesisFile> {
        let g: GenesisFile = parse_toml(path, text)?;
        let bad = |key: &str, reason: String| invalid(path, text, key, reason);
        if !(2..=MAX_ACCOUNTS).contains(&g.accounts) {
            return Err(bad("accounts", format!("must be 2 to {MAX_ACCOUNTS}")));
        }
        if g.slot_ms == 0 || g.slot_ms > MAX_SLOT_MS {
            return Err(bad(
                "slot_ms",
                format!("must be 1 to {MAX_SLOT_MS} (a day)"),
            ));
        }
        if g.genesis_time_ms > MAX_GENESIS_TIME_MS {
            return Err(bad(
                "genesis_time_ms",
                format!("must be at most {MAX_GENESIS_TIME_MS} (Unix ms, year 2255)"),
            ));
        }
        if g.max_block_txs == 0 || g.max_block_txs > MAX_MAX_BLOCK_TXS {
            return Err(bad(
                "max_block_txs",
                format!("must be 1 to {MAX_MAX_BLOCK_TXS}"),
            ));
        }
        if g.validators.is_empty() {
            return Err(bad("validators", "no [[validators]]".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, v) in g.validators.iter().enumerate() {
            let key = format!("validators[{i}].id");
            if v.id.len() > MAX_LEADER_LEN {
                return Err(bad(
                    &key,
                    format!(
                        "validator id `{}` is {} bytes; a block header holds at most {MAX_LEADER_LEN}",
                        v.id,
                        v.id.len()
                    ),
                ));
            }
            if v.id.is_empty() || !seen.insert(v.id.as_str()) {
                return Err(bad(
                    &key,
                    format!("validator id `{}` empty or repeated", v.id),
                ));
            }
        }
        if g.validators.iter().all(|v| v.stake == 0) {
            return Err(bad(
                "validators[0].stake",
                "every validator has stake 0: the schedule would give no node a slot".into(),
            ));
        }
        Ok(g)
    }

    /// The file as TOML (what `dyno node genesis` writes).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a genesis always serializes")
    }

    /// SHA-256 of the canonical encoding.
    pub fn hash(&self) -> Hash {
        let mut h = Sha256::new();
        let s = |h: &mut Sha256, v: &str| {
            h.update((v.len() as u64).to_le_bytes());
            h.update(v.as_bytes());
        };
        h.update(b"dyno-genesis-file-v1");
        s(&mut h, &self.network);
        for v in [
            self.seed,
            self.accounts as u64,
            self.balance,
            self.slot_ms,
            self.genesis_time_ms,
            self.max_block_txs as u64,
            self.validators.len() as u64,
        ] {
            h.update(v.to_le_bytes());
        }
        for v in &self.validators {
            s(&mut h, &v.id);
            h.update(v.stake.to_le_bytes());
        }
        Hash(h.finalize().into())
    }

    /// Loads the accounts (signs nothing; derives the keys) and the hash.
    pub fn load(self) -> Genesis {
        let accounts = fund_initial_accounts(self.accounts, self.balance, self.seed);
        let total_stake = self.validators.iter().map(|v| v.stake as u128).sum();
        let leader_keys = self
            .validators
            .iter()
            .map(|v| leader_key_of(self.seed, &v.id).verifying_key())
            .collect();
        Genesis {
            hash: self.hash(),
            accounts: std::sync::Arc::new(accounts),
            file: self,
            total_stake,
            leader_keys,
        }
    }
}

/// The block-signing key of validator `id`, derived from the seed as the account keys
/// are (so a devnet needs no key files; whoever holds the genesis can derive it).
fn leader_key_of(seed: u64, id: &str) -> SigningKey {
    let mut h = Sha256::new();
    h.update(b"dyno-validator-key");
    h.update(seed.to_le_bytes());
    h.update((id.len() as u64).to_le_bytes());
    h.update(id.as_bytes());
    SigningKey::from_bytes(&h.finalize().into())
}

impl Genesis {
    /// Slot length in ns.
    pub fn slot_ns(&self) -> u64 {
        self.file.slot_ms.saturating_mul(1_000_000)
    }

    /// Unix ns at which slot 0 starts.
    pub fn genesis_time_ns(&self) -> u64 {
        self.file.genesis_time_ms.saturating_mul(1_000_000)
    }

    /// Unix ns at which `slot` starts (saturating: a slot past the year 2554 never starts).
    pub fn slot_start_ns(&self, slot: u64) -> u64 {
        self.genesis_time_ns()
            .saturating_add(slot.saturating_mul(self.slot_ns()))
    }

    /// The block-signing key of validator `id` (none: not a validator).
    pub fn leader_key(&self, id: &str) -> Option<SigningKey> {
        self.validator(id)
            .map(|_| leader_key_of(self.file.seed, id))
    }

    /// The public key that verifies validator `id`'s blocks (none: not a validator).
    pub fn leader_verifying_key(&self, id: &str) -> Option<&VerifyingKey> {
        let i = self.file.validators.iter().position(|v| v.id == id)?;
        self.leader_keys.get(i)
    }

    /// The slot running at Unix time `now_ns` (0 before genesis).
    pub fn slot_at(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.genesis_time_ns()) / self.slot_ns()
    }

    /// The validator id, if any.
    pub fn validator(&self, id: &str) -> Option<&Validator> {
        self.file.validators.iter().find(|v| v.id == id)
    }

    /// The leader of `slot`: stake-weighted, a pure function of the genesis hash and the
    /// slot, so every node computes the same schedule without talking. A validator with
    /// stake s leads each slot with probability s / total stake.
    pub fn leader(&self, slot: u64) -> &str {
        let mut h = Sha256::new();
        h.update(b"dyno-leader");
        h.update(self.hash);
        h.update(self.file.seed.to_le_bytes());
        h.update(slot.to_le_bytes());
        let d: [u8; 32] = h.finalize().into();
        // 128 bits of hash modulo a total stake below 2^64 * validators: the bias is
        // below 2^-60, far beneath any stake ratio a test can see.
        let mut pick =
            u128::from_le_bytes(d[..16].try_into().expect("16 bytes")) % self.total_stake;
        for v in &self.file.validators {
            if pick < v.stake as u128 {
                return &v.id;
            }
            pick -= v.stake as u128;
        }
        unreachable!("pick < total stake, the sum of the stakes")
    }
}

/// The validators of `--validators ID=STAKE,...`, in order; an entry that is not
/// `ID=STAKE` with a whole stake is refused, naming it.
pub fn parse_validators(specs: &[String]) -> Result<Vec<Validator>> {
    specs
        .iter()
        .map(|v| {
            let bad = |reason| Error::Validators {
                spec: v.clone(),
                reason,
            };
            let (id, stake) = v.split_once('=').ok_or_else(|| bad("expected ID=STAKE"))?;
            let stake = stake
                .parse()
                .map_err(|_| bad("the stake must be a whole number"))?;
            Ok(Validator {
                id: id.to_string(),
                stake,
            })
        })
        .collect()
}

impl GenesisFile {
    /// A refusal of the file written from flags, named by the flag that gave the key
    /// (`--accounts 0: must be 2 to ...`): the text is dyno's, not the user's, so its line
    /// would point nowhere the user can look.
    fn flag_at_fault(&self, e: Error) -> Error {
        let Error::Config(d) = &e else { return e };
        let key = d.key.as_deref().unwrap_or("");
        let field = key.split(['[', '.']).next().unwrap_or(key);
        let (flag, value) = match field {
            "accounts" => ("--accounts", self.accounts.to_string()),
            "balance" => ("--balance", self.balance.to_string()),
            "slot_ms" => ("--slot-ms", self.slot_ms.to_string()),
            "max_block_txs" => ("--max-block-txs", self.max_block_txs.to_string()),
            "genesis_time_ms" => ("--start-in", String::new()),
            "network" => ("--network", self.network.clone()),
            "seed" => ("--seed", self.seed.to_string()),
            // A validator's entry: the key says which one.
            _ => ("--validators", format!("(key `{key}`)")),
        };
        let flag = if value.is_empty() {
            flag.to_string()
        } else {
            format!("{flag} {value}")
        };
        Error::Flag {
            flag,
            reason: d.message.clone(),
        }
    }

    /// Writes the file to `out` (`dyno node genesis --out`), only once it parses back with
    /// the checks the nodes make (a failure names the flag that gave the value); an
    /// existing file is replaced only when `force`.
    pub fn write_new(&self, out: &Path, force: bool) -> Result<()> {
        let text = self.to_toml();
        GenesisFile::parse(Path::new("genesis"), &text).map_err(|e| self.flag_at_fault(e))?;
        if out.exists() && !force {
            return Err(Error::Exists(out.to_path_buf()));
        }
        std::fs::write(out, text).map_err(|source| Error::Out {
            path: out.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(stakes: &[u64]) -> GenesisFile {
        GenesisFile {
            network: "t".into(),
            seed: 7,
            accounts: 16,
            balance: 1000,
            slot_ms: 100,
            genesis_time_ms: 1_000,
            max_block_txs: DEFAULT_MAX_BLOCK_TXS,
            validators: stakes
                .iter()
                .enumerate()
                .map(|(i, &stake)| Validator {
                    id: format!("n{i}"),
                    stake,
                })
                .collect(),
        }
    }

    #[test]
    fn a_genesis_funding_a_trillion_accounts_is_refused_before_any_key_is_derived() {
        let text = "network = \"t\"\nseed = 1\naccounts = 1000000000000\nbalance = 1\n\
                    slot_ms = 100\ngenesis_time_ms = 0\n[[validators]]\nid = \"a\"\nstake = 1\n";
        let e = GenesisFile::parse(Path::new("g.toml"), text).unwrap_err();
        assert!(e.to_string().contains("key `accounts`"), "{e}");
        assert!(e.to_string().contains("2 to 1048576"), "{e}");
        let ok = text.replace("1000000000000", "1048576");
        assert!(GenesisFile::parse(Path::new("g.toml"), &ok).is_ok());
    }

    #[test]
    fn the_schedule_is_deterministic_and_follows_stake() {
        let a = file(&[1, 3, 0]).load();
        let b = file(&[1, 3, 0]).load();
        let count = |g: &Genesis, id: &str| (0..4000).filter(|&s| g.leader(s) == id).count();
        for s in 0..200 {
            assert_eq!(a.leader(s), b.leader(s));
        }
        let (n0, n1, n2) = (count(&a, "n0"), count(&a, "n1"), count(&a, "n2"));
        assert_eq!(n2, 0, "stake 0 never leads");
        assert_eq!(n0 + n1, 4000);
        // 3:1 stake; binomial sd of n1 is ~27, so 2800..3200 fails only on a real bias.
        assert!((2800..3200).contains(&n1), "n1 led {n1} of 4000");
        let mut other = file(&[1, 3, 0]);
        other.seed = 8;
        let c = other.load();
        assert!(
            (0..200).any(|s| c.leader(s) != a.leader(s)),
            "seed changes it"
        );
    }

    #[test]
    fn the_hash_covers_every_field() {
        let base = file(&[1, 2]);
        let h = base.hash();
        let mut variants = Vec::new();
        let mut f = base.clone();
        f.network = "u".into();
        variants.push(f);
        let mut f = base.clone();
        f.slot_ms += 1;
        variants.push(f);
        let mut f = base.clone();
        f.genesis_time_ms += 1;
        variants.push(f);
        let mut f = base.clone();
        f.max_block_txs += 1;
        variants.push(f);
        let mut f = base.clone();
        f.validators[1].stake = 3;
        variants.push(f);
        let mut f = base.clone();
        f.validators.swap(0, 1);
        variants.push(f);
        for v in variants {
            assert_ne!(v.hash(), h, "{v:?}");
        }
        let round = GenesisFile::parse(Path::new("g.toml"), &base.to_toml()).unwrap();
        assert_eq!(round.hash(), h);
    }

    #[test]
    fn bad_files_name_line_and_key() {
        let p = Path::new("g.toml");
        let mut text = file(&[0, 0]).to_toml();
        let e = GenesisFile::parse(p, &text).unwrap_err().to_string();
        assert!(
            e.starts_with("g.toml:")
                && e.contains("`validators[0].stake`")
                && e.contains("no node"),
            "{e}"
        );
        text = file(&[1, 1]).to_toml().replace("\"n1\"", "\"n0\"");
        let e = GenesisFile::parse(p, &text).unwrap_err().to_string();
        // The repeat, not the first use, is at fault.
        let line = text
            .lines()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|l| l.contains("\"n0\""))
            .unwrap()
            + 1;
        assert!(
            e.contains(&format!("g.toml:{line}:")) && e.contains("key `validators[1].id`"),
            "{e}"
        );
        let long = "v".repeat(MAX_LEADER_LEN + 1);
        text = file(&[1, 1])
            .to_toml()
            .replace("\"n1\"", &format!("\"{long}\""));
        let e = GenesisFile::parse(p, &text).unwrap_err().to_string();
        let line = text.lines().position(|l| l.contains(&long)).unwrap() + 1;
        assert!(
            e.contains(&format!("g.toml:{line}:"))
                && e.contains("`validators[1].id`")
                && e.contains("at most 64"),
            "{e}"
        );
        let mut f = file(&[1]);
        f.slot_ms = u64::MAX / 1000;
        let e = GenesisFile::parse(p, &f.to_toml()).unwrap_err().to_string();
        assert!(e.contains("`slot_ms`"), "{e}");
        let mut f = file(&[1]);
        f.genesis_time_ms = u64::MAX / 1000;
        let e = GenesisFile::parse(p, &f.to_toml()).unwrap_err().to_string();
        assert!(e.contains("`genesis_time_ms`"), "{e}");
        let e = GenesisFile::parse(p, "network = \"x\"\nseed = \"one\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("g.toml:2:"), "{e}");
        assert!(e.contains("key `seed`") && e.contains("\n2 | seed"), "{e}");
        let mut f = file(&[1]);
        f.max_block_txs = 0;
        let e = GenesisFile::parse(p, &f.to_toml()).unwrap_err().to_string();
        assert!(e.contains("key `max_block_txs`"), "{e}");
        let no_limit = file(&[1]).to_toml().replace("max_block_txs = 20000\n", "");
        assert_eq!(
            GenesisFile::parse(p, &no_limit).unwrap().max_block_txs,
            DEFAULT_MAX_BLOCK_TXS,
            "an older genesis without the key keeps the default"
        );
    }
}
