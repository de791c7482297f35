// The E2B SDK's network options on moat serve, which runs in the test's
// network namespace (integration/e2b_network_test.go): a sandbox that
// denies all but allowOut's name on one port reaches the test's server
// by that name, through its own resolver, and is refused another port,
// another address and another name, until updateNetwork gives it another
// list (wider than the create's, too); one without internet access reaches nothing. Every result is
// checked.
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
// updateNetwork may drop the create's entries and add others: the
// sandbox's moat usernet takes the new list as the sentry does.
await open.updateNetwork({ denyOut: [ALL_TRAFFIC], allowOut: [] })
const closedNow = await refused(open, fetch('allowed.test', port))
check('after updateNetwork dropped its entry allowOut\'s name is refused', closedNow === '', closedNow)
await open.updateNetwork({ denyOut: [ALL_TRAFFIC], allowOut: [`allowed.test:${port}`, `10.214.0.1:${otherPort}`] })
eq('updateNetwork adds an address past the create\'s list', (await open.commands.run(fetch('10.214.0.1', otherPort))).stdout.trim(), from)
eq('and gives back the name it dropped', (await open.commands.run(fetch('allowed.test', port))).stdout.trim(), from)
const stillOut = await refused(open, fetch('10.214.0.2', port))
check('what the new list does not name is still refused', stillOut === '', stillOut)
eq('kill kills the sandbox with a network', await open.kill(), true)

// A sandbox created with all of the network may be given any list.
const wide = await Sandbox.create('base', { timeoutMs: 120_000, network: { allowOut: [ALL_TRAFFIC] } })
eq('all of the network reaches the other port', (await wide.commands.run(fetch('10.214.0.1', otherPort))).stdout.trim(), from)
await wide.updateNetwork({ denyOut: [ALL_TRAFFIC], allowOut: [`10.214.0.1:${port}`] })
eq("after updateNetwork its allowOut's address is reached", (await wide.commands.run(fetch('10.214.0.1', port))).stdout.trim(), from)
const otherNow = await refused(wide, fetch('10.214.0.1', otherPort))
check('after updateNetwork what it does not list is refused', otherNow === '', otherNow)
await wide.updateNetwork({ allowOut: [ALL_TRAFFIC] })
eq('updateNetwork back to all reaches the other port again', (await wide.commands.run(fetch('10.214.0.1', otherPort))).stdout.trim(), from)
eq('kill kills the widened sandbox', await wide.kill(), true)

const closed = await Sandbox.create('base', { timeoutMs: 60_000, allowInternetAccess: false })
const why = await refused(closed, fetch('10.214.0.1', port))
check('without internet access nothing is reached', why === '', why)
eq('kill kills the sandbox without a network', await closed.kill(), true)

finish()
