# syscall_counts.awk TRACE — from an `strace -f -y` trace of
# tests/helpers/syscall_ops.py: "FIRST TEN REQUESTS CONNECTS", the calls
# between marks a and b, between b and c (not counting waits, socket reads
# and pointer probes: how many depends on when replies arrive), and the
# sendmsg/sendto and connect calls between a and c.
/syscalls-mark-a/ { on = 1; next }
/syscalls-mark-b/ { on = 2; next }
/syscalls-mark-c/ { on = 0 }
!on || /resumed>/ || / (\+\+\+|---) / { next }
{
	call = $2; sub(/\(.*/, "", call)
	if (call ~ /^(sendmsg|sendto)$/) req++
	if (call == "connect") conn++
	if (call ~ /^(ppoll|poll|epoll_wait|epoll_pwait|select|pselect6|process_vm_readv)$/) next
	if (call ~ /^(read|recvmsg|recvfrom|readv)$/ && $2 ~ /<(TCP|TCPv6|UDP|socket):/) next
	n[on]++
}
END { printf "%d %d %d %d\n", n[1], n[2], req, conn }
