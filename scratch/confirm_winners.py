"""The confirmation jobs of a config probe's timing: each job of JOBS (a `config_probe` jobs file)
kept with only the variants whose median time in RESULT (that jobs file's `time` result) beats the
tuned config's by at least MIN_GAIN, so a second `time` call in more rounds can confirm them.
  python3 scratch/confirm_winners.py JOBS RESULT OUT [MIN_GAIN=0.015]"""
import json
import statistics
import sys


def key(job: dict) -> tuple:
    return job["op"], job["dtype"], json.dumps(job["shape"]), job.get("dtypes", ""), json.dumps(job.get("from_shape"))


def main(jobs_path: str, result_path: str, out_path: str, min_gain: float = 0.015) -> None:
    rows = {key(row): row for row in json.load(open(result_path))}
    confirm = []
    for job in json.load(open(jobs_path)):
        row = rows.get(key(job))
        if row is None or "tuned" not in row["times"]:
            continue
        tuned = statistics.median(row["times"]["tuned"])
        winners = {label: overrides for label, overrides in job["variants"].items()
                   if label in row["times"] and tuned / statistics.median(row["times"][label]) >= 1 + min_gain}
        if winners:
            confirm.append({**job, "variants": winners})
    json.dump(confirm, open(out_path, "w"), indent=1)
    print(f"{len(confirm)} jobs, {sum(len(job['variants']) for job in confirm)} variants at >= {1 + min_gain:.3f}x -> {out_path}")


if __name__ == "__main__":
    main(*sys.argv[1:3], sys.argv[3], *(float(value) for value in sys.argv[4:5]))
