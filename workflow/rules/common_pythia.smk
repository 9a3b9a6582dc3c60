# Helpers of the Pythia branch (pythia:): revisions, paths, outputs.
PYTHIA = config["pythia"]
PYTHIA_ON = bool(PYTHIA["enabled"])
PYTHIA_DIR = f"{RESULTS}/pythia"
REVISION = "{slug}/step_{step}"


HUB_SEP = "/"  # hub ids are org/name; paths use org--name


def slug(model_id):
    """Filesystem-safe name of a hub model id: EleutherAI/pythia-70m → EleutherAI--pythia-70m."""
    return model_id.replace(HUB_SEP, "--")


def model_id(wildcards):
    return wildcards.slug.replace("--", HUB_SEP, 1)


def pythia_revisions(kind):
    """(slug, step) of every revision the weights or embeddings part of the branch analyses."""
    if not PYTHIA_ON:
        return []
    part = PYTHIA[kind]
    return [(slug(m), int(s)) for m in part["models"] for s in part["steps"]]


def pythia_paths(kind, suffix):
    return [
        f"{PYTHIA_DIR}/{kind}/{m}/step_{s}.{suffix}" for m, s in pythia_revisions(kind)
    ]


def pythia_device_gpu():
    """GPU request of an embedding job (topotrain.devices.wants_gpu of its device)."""
    return int(wants_gpu(PYTHIA["embeddings"]["device"]))


def revision_records(wildcards):
    """The records read from one revision's weights: its weight and embedding records."""
    revision = (wildcards.slug, int(wildcards.step))
    return [
        f"{PYTHIA_DIR}/{kind}/{wildcards.slug}/step_{wildcards.step}.json"
        for kind in ("weights", "embeddings")
        if revision in pythia_revisions(kind)
    ]


def get_pythia_releases():
    """With keep_weights: false, every revision's release record (its downloaded weights gone)."""
    if PYTHIA["keep_weights"]:
        return []
    revisions = dict.fromkeys(
        pythia_revisions("weights") + pythia_revisions("embeddings")
    )
    return [f"{PYTHIA_DIR}/released/{m}/step_{s}.json" for m, s in revisions]


def get_pythia_outputs():
    out = get_pythia_releases()
    if pythia_revisions("weights"):
        out += [
            f"{RESULTS}/tables/pythia_weights.csv",
            f"{RESULTS}/figures/pythia_weights.png",
        ]
    if pythia_revisions("embeddings"):
        out += [f"{RESULTS}/tables/pythia_comparison.csv"]
        out += [f"{RESULTS}/figures/{name}.png" for name in PYTHIA_FIGURES]
    return out
