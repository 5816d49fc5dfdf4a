package trace_test

// sysSetns is setns(2) on linux/amd64 (the syscall package lacks it there).
const sysSetns = 308
