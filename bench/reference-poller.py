"""The documented Python way of watching Scheduled Events, as a memory and CPU anchor for the
benchmarks: poll the endpoint with `requests` once a second, and when DocumentIncarnation
changes, post each event to a webhook. Usage: python3 bench/reference-poller.py IMDS_URL WEBHOOK_URL
"""
import sys
import time

import requests

imds, webhook = sys.argv[1], sys.argv[2]
url = imds + "/metadata/scheduledevents?api-version=2020-07-01"
last = None
while True:
    time.sleep(1)
    try:
        document = requests.get(url, headers={"Metadata": "true"}, timeout=5).json()
        if document["DocumentIncarnation"] != last:
            last = document["DocumentIncarnation"]
            for event in document["Events"]:
                requests.post(webhook, json=event, timeout=5)
    except Exception as err:  # the sample prints and carries on
        print(err, file=sys.stderr)
