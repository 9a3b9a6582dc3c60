# Weight topology: one job per checkpoint (neural persistence + Vietoris–Rips); never imports torch.
# Group "topology": on a cluster, --group-components topology=N submits N checkpoints as one job
# (profiles/slurm); local runs ignore groups.


rule weight_topology:
    input:
        CKPT,
    output:
        record=f"{TOPO}.json",
        diagrams=f"{TOPO}.npz",
    log:
        f"{RESULTS}/logs/topology/{RUN}/step_{{step}}.log",
    group:
        "topology"
    conda:
        "../../envs/topology.yaml"
    threads: config["topology"].get("threads", 1)
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        topology=get_topology_params,
    script:
        "../scripts/weight_topology.py"
