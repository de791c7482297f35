// The E2B SDK's network options on moat serve, which runs in the test's
// network namespace (integration/e2b_network_test.go): a sandbox that
// denies all but allowOut's name on one port reaches the test's server
// by that name, through its own resolver, and is refused another port,
// another address and another name; one without internet access reaches
// nothing. Every result is checked.
import { Sandbox, CommandExitError, ALL_TRAFFIC } from 'e2b'
import { check, eq, finish } from './checks.mjs'

const port = process.env.MOAT_TEST_PORT
const otherPort = process.env.MOAT_TEST_OTHER_PORT
const from = `from ${process.env.MOAT_TEST_SOURCE}`

// fetch is a command that prints what http://host:port/ answers.
const fetch = (host, p) =>
  `python3 -c "import urllib.request; print(urllib.request.urlopen('http://${host}:${p}/', timeout=10).read().decode().strip())"`

// refused says whether cmd fails in sbx, as a refused fetch does.
async function refused(sbx, cmd) {
  try {
    await sbx.commands.run(cmd)
    return 'it succeeded'
  } catch (err) {
    return err instanceof CommandExitError && err.exitCode !== 0 ? '' : String(err)
  }
}

const open = await Sandbox.create('base', {
  timeoutMs: 120_000,
  network: { denyOut: [ALL_TRAFFIC], allowOut: [`allowed.test:${port}`] },
})
const r = await open.commands.run(fetch('allowed.test', port))
eq("allowOut's name is reached", r.stdout.trim(), from)
for (const [what, host, p] of [
  ['another port', '10.214.0.1', otherPort],
  ['another address', '10.214.0.2', port],
  ['another name', 'denied.test', port],
]) {
  const why = await refused(open, fetch(host, p))
  check(`${what} is refused`, why === '', why)
}
eq('kill kills the sandbox with a network', await open.kill(), true)

const closed = await Sandbox.create('base', { timeoutMs: 60_000, allowInternetAccess: false })
const why = await refused(closed, fetch('10.214.0.1', port))
check('without internet access nothing is reached', why === '', why)
eq('kill kills the sandbox without a network', await closed.kill(), true)

finish()
