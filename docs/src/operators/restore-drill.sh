#!/bin/sh
# The restore drill: shows that a backup and the key export restore into a working
# store, without touching the running holder. Run it as root on the holder's machine,
# e.g. once a month on the newest backup:
#
#   sh restore-drill.sh /var/backups/isto/isto-20261201-031500.isto-backup /root/isto-keys.json
#
# It checks the file, restores it with the keys into a scratch data directory (every
# sealed value must open with them), prints the counts of the restored store beside the
# live holder's, and deletes the scratch directory. Exit status 0: the drill passed.
set -eu
backup=$1
keys=$2
drill=$(mktemp -d "${TMPDIR:-/tmp}/isto-drill-XXXXXX")
trap 'rm -rf "$drill"' EXIT

echo "== 1. the backup file is whole (format, checksum, counts)"
isto admin backup --verify "$backup"

echo "== 2. restore it with the key export into a scratch data directory"
isto --data-dir "$drill/data" admin restore "$backup" --keys "$keys"

echo "== 3. the restored store opens and answers"
isto --data-dir "$drill/data" admin stats

echo "== 4. the live holder, for comparison (newer than the backup)"
isto admin stats

echo "restore drill passed: $backup restores with $keys"
