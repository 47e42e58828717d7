// Package sandboxtest is test support for the HTTP sandbox backends
// (daytona, vercel) and their fakes: what their tests and fakes would
// otherwise repeat line for line.
//
// For the fakes (daytonatest, verceltest), Process runs a job's command
// as a real local process in a process group of its own and captures its
// output as it grows.
//
// For the backends' tests, the scenarios every such backend passes alike:
// TimeoutEndsSandbox, OrphanReaped (with RunHelperWorker and
// KilledWorker, the helper worker process it kills), OutputAllBytes and
// StartTimeout, with the small helpers they share (NewBackend, PIDs,
// WaitGone). What differs between the backends, such as what the fake
// records when a sandbox is stopped, is passed in as values and
// callbacks.
//
// It is an ordinary package so that both the fakes and the tests can
// import it; nothing but tests and fakes may.
package sandboxtest
