"""One V100 server and one vLLM instance that plan without findings, for the tests of the plan's checks."""

SERVER = {
    "gpu_model": "Tesla V100-SXM2-32GB",
    "gpu_count": 8,
    "compute_capability": "7.0",
    "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]],
    "ram_gb": 512,
}
INSTANCE = {
    "name": "m1",
    "engine": "vllm",
    "model": "/srv/models/command-r-32b",
    "gpus": [0, 1, 2, 3],
    "max_model_len": 32768,
    "max_num_seqs": 16,
    "port": 8001,
}
