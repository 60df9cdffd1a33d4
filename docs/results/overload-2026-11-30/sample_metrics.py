import re, sys, time, urllib.request
end = time.time() + float(sys.argv[1])
rows = []
while time.time() < end:
    try:
        t = urllib.request.urlopen("http://127.0.0.1:9997/metrics", timeout=1).read().decode()
        def g(pat):
            m = re.search(pat, t, re.M)
            return float(m.group(1)) if m else float("nan")
        rows.append((time.time(), g(r"^process_resident_memory_bytes (\S+)"), g(r'^normd_allocator_bytes\{state="in_use"\} (\S+)'),
                     g(r'^normd_allocator_bytes\{state="free_held"\} (\S+)'), g(r"^normd_inflight_requests (\S+)"), g(r"^normd_queue_depth (\S+)")))
    except Exception as e:
        pass
    time.sleep(0.05)
rows.sort(key=lambda r: -r[1])
print("top RSS samples: rss_MiB in_use_MiB free_held_MiB inflight queue_depth")
for r in rows[:5]:
    print("%.1f %.1f %.1f %d %d" % (r[1]/2**20, r[2]/2**20, r[3]/2**20, r[4], r[5]))
print("samples", len(rows))
rows.sort(key=lambda r: -r[2])
print("max in_use sample: rss %.1f in_use %.1f free_held %.1f inflight %d" % (rows[0][1]/2**20, rows[0][2]/2**20, rows[0][3]/2**20, rows[0][4]))
import statistics
print("median in_use %.1f MiB, median rss %.1f MiB" % (statistics.median(r[2] for r in rows)/2**20, statistics.median(r[1] for r in rows)/2**20))
