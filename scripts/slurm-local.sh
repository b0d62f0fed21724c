#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine (Debian's slurm-wlm and
# munge), for `retrace sweep --slurm` and its test. Idempotent: a cluster
# already answering `sinfo` is left alone. Needs root (it writes
# /etc/slurm/slurm.conf and starts munged, slurmctld and slurmd as daemons,
# without systemd, so it also works in a container).
#
#   apt-get install slurmctld slurmd slurm-client munge
#   sudo scripts/slurm-local.sh          # then: sinfo, sbatch, squeue …
#   sudo scripts/slurm-local.sh stop
set -euo pipefail

if [ "${1:-}" = stop ]; then
  pkill -x slurmd || true
  pkill -x slurmctld || true
  exit 0
fi

if sinfo -h -o %T 2>/dev/null | grep -Eq 'idle|mix|alloc'; then
  exit 0
fi

host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)

# munge: the key the package made, or a new one.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown munge:munge /etc/munge/munge.key 2>/dev/null || true
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
if ! pgrep -x munged >/dev/null; then
  if id munge >/dev/null 2>&1; then
    su -s /bin/sh munge -c 'munged' || munged --force
  else
    munged --force
  fi
fi

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cat > /etc/slurm/slurm.conf <<CONF
# Written by retrace's scripts/slurm-local.sh: one node, this machine.
ClusterName=retrace
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
MaxArraySize=10001
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# No cgroup.conf: slurmd detects what the machine mounts.
rm -f /etc/slurm/cgroup.conf

pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 1 60); do
  if sinfo -h -o %T 2>/dev/null | grep -Eq 'idle|mix|alloc'; then
    sinfo
    exit 0
  fi
  sleep 1
done
echo "slurm-local: the node did not come up; see /var/log/slurm/slurmctld.log and slurmd.log" >&2
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
