#!/usr/bin/env python3
"""What normd did between two scrapes of its /metrics: requests, launches, requests per launch, and the
average server-side time per request and per launch stage.

    metrics_delta.py BEFORE.txt AFTER.txt [--bytes-per-request N]

With --bytes-per-request (bytes up plus bytes down of one request, all requests alike) it also compares
the device time per request (h2d + kernel + d2h) with those bytes moved at the pinned host link
bandwidth normd measured at start-up (normd_host_link_bandwidth_bytes_per_second): the stage
target is a ratio of at most 1.2.
"""
import argparse
import re

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$')


def read(path):
    values = {}
    with open(path) as f:
        for line in f:
            m = SAMPLE.match(line.strip())
            if m and not line.startswith('#'):
                values[(m.group(1), m.group(2) or '')] = float(m.group(3))
    return values


def total(delta, name, must_contain=()):
    return sum(v for (n, labels), v in delta.items() if n == name and all(c in labels for c in must_contain))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('before')
    parser.add_argument('after')
    parser.add_argument('--bytes-per-request', type=float, default=0)
    args = parser.parse_args()
    before, after = read(args.before), read(args.after)
    delta = {k: v - before.get(k, 0.0) for k, v in after.items()}

    requests = total(delta, 'normd_requests_total', ('method="Normalize"', 'code="OK"'))
    launches = total(delta, 'normd_launches_total')
    if requests <= 0 or launches <= 0:
        print(f'no requests ({requests:.0f}) or launches ({launches:.0f}) between the scrapes')
        return
    duration = total(delta, 'normd_request_duration_seconds_sum', ('method="Normalize"',))
    queue_wait = total(delta, 'normd_queue_wait_seconds_sum')
    batch_requests = total(delta, 'normd_batch_requests_sum')
    stages = {}
    for (name, labels), v in delta.items():
        if name == 'normd_stage_duration_seconds_sum':
            stage = re.search(r'stage="(\w+)"', labels).group(1)
            stages[stage] = stages.get(stage, 0.0) + v
    print(f'requests {requests:.0f}, launches {launches:.0f}, requests per launch {batch_requests / launches:.2f}')
    print(f'server time per request (receipt to reply) {duration / requests * 1e6:.1f} us, '
          f'queue wait {queue_wait / requests * 1e6:.1f} us')
    print('per launch: ' + ', '.join(f'{s} {v / launches * 1e6:.1f} us' for s, v in sorted(stages.items())))
    device = sum(stages.get(s, 0.0) for s in ('h2d', 'kernel', 'd2h'))
    if args.bytes_per_request > 0 and device > 0:
        links = {labels: v for (n, labels), v in after.items() if n == 'normd_host_link_bandwidth_bytes_per_second'}
        up = next((v for labels, v in links.items() if 'direction="h2d"' in labels), 0)
        down = next((v for labels, v in links.items() if 'direction="d2h"' in labels), 0)
        if up <= 0 or down <= 0:
            print('no host link bandwidth in the metrics: no stage ratio')
            return
        bandwidth = min(up, down)
        ideal = args.bytes_per_request / bandwidth
        per_request = device / requests
        print(f'device time per request (h2d + kernel + d2h) {per_request * 1e3:.3f} ms; '
              f'{args.bytes_per_request / 2**20:.0f} MiB at the measured link bandwidth '
              f'(h2d {up / 1e9:.1f} GB/s, d2h {down / 1e9:.1f} GB/s; the lower used) {ideal * 1e3:.3f} ms; '
              f'ratio {per_request / ideal:.2f} (target: <= 1.2)')


if __name__ == '__main__':
    main()
