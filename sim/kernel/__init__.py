"""The simulation kernel: simpy with integer ticks, the network, disks, node hosts
and fault injection."""
