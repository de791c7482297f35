// The E2B JavaScript SDK, unmodified, against `moat serve`: every call's
// result is checked, and the first that is wrong ends the script with
// status 1. E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY point the SDK at
// the server; the test that runs this sets them.
import { Sandbox, CommandExitError, NotFoundError, AuthenticationError } from 'e2b'
import { randomBytes } from 'node:crypto'
import http from 'node:http'

import { check, eq, throws, sha256, finish } from './checks.mjs'

const tag = randomBytes(6).toString('hex')
const t0 = performance.now()
const sbx = await Sandbox.create('base', { timeoutMs: 120_000, metadata: { suite: 'e2b', tag } })
console.log(`create took ${(performance.now() - t0).toFixed(1)} ms`)
check('create gives an id', typeof sbx.sandboxId === 'string' && sbx.sandboxId.length > 0, sbx.sandboxId)

// A command with streamed output and its exit code.
const chunks = []
const r = await sbx.commands.run(`python3 -c 'import sys; print("hello from", sys.version_info[0]); print("to stderr", file=sys.stderr)'`,
  { onStdout: (d) => chunks.push(d) })
eq('python3 exit code', r.exitCode, 0)
eq('python3 stdout', r.stdout, 'hello from 3\n')
eq('python3 stderr', r.stderr, 'to stderr\n')
eq('onStdout saw the output', chunks.join(''), 'hello from 3\n')
try {
  await sbx.commands.run('echo out; exit 3')
  check('a failing command throws', false, 'did not throw')
} catch (err) {
  check('a failing command throws CommandExitError', err instanceof CommandExitError, String(err))
  eq('its exit code', err.exitCode, 3)
  eq('its stdout', err.stdout, 'out\n')
}
const env = await sbx.commands.run('echo "$GREETING" in "$(pwd)"', { envs: { GREETING: 'hi' }, cwd: '/tmp' })
eq('envs and cwd', env.stdout, 'hi in /tmp\n')

// A background command: listed, sent input, killed.
const bg = await sbx.commands.run('read line; echo "got $line"; sleep 1000', { background: true, stdin: true })
const listed = await sbx.commands.list()
check('the background command is listed', listed.some((p) => p.pid === bg.pid && p.cmd === '/bin/bash'), JSON.stringify(listed))
const got = new Promise((resolve) => {
  const seen = []
  bg.onStdout = (d) => { seen.push(d); if (seen.join('').includes('got ping')) resolve(seen.join('')) }
})
await sbx.commands.sendStdin(bg.pid, 'ping\n')
eq('its stdin reached it', await got, 'got ping\n')
eq('kill finds it', await bg.kill(), true)
try {
  await bg.wait()
  check('a killed command throws', false, 'did not throw')
} catch (err) {
  check('a killed command ends with an error', err instanceof CommandExitError, String(err))
}
const after = await sbx.commands.list()
check('the killed command is no longer listed', !after.some((p) => p.pid === bg.pid), JSON.stringify(after))
eq('killing it again finds nothing', await sbx.commands.kill(bg.pid), false)

// A terminal: what is typed reaches a shell, what it prints comes back,
// and a resize reaches the guest.
let screen = ''
const decoder = new TextDecoder()
const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += decoder.decode(d, { stream: true }) } })
async function waitScreen(text) {
  const until = Date.now() + 60_000
  while (!screen.includes(text) && Date.now() < until) await new Promise((res) => setTimeout(res, 50))
  return screen.includes(text)
}
await sbx.pty.sendInput(term.pid, new TextEncoder().encode('echo hi-$((6*7))\n'))
check('the terminal runs what is typed', await waitScreen('hi-42'), JSON.stringify(screen))
await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
await sbx.pty.sendInput(term.pid, new TextEncoder().encode('sleep 1; echo size-$(stty size | tr " " x)\n'))
check('a resize reaches the terminal', await waitScreen('size-30x100'), JSON.stringify(screen))
eq('the terminal is killed', await term.kill(), true)

// stdin closed: the command sees its end.
const cat = await sbx.commands.run('cat', { background: true, stdin: true })
await cat.sendStdin('abc')
await cat.closeStdin()
eq('closeStdin ends the input', (await cat.wait()).stdout, 'abc')

// Files.
const w = await sbx.files.write('/tmp/dir/a.txt', 'contents of a\n')
eq('write answers the path', [w.path, w.name], ['/tmp/dir/a.txt', 'a.txt'])
eq('read gives back what was written', await sbx.files.read('/tmp/dir/a.txt'), 'contents of a\n')
const seenByShell = await sbx.commands.run('cat /tmp/dir/a.txt')
eq('a command sees the file', seenByShell.stdout, 'contents of a\n')
eq('makeDir makes a directory', await sbx.files.makeDir('/tmp/dir/sub/deeper'), true)
eq('makeDir of an existing one is false', await sbx.files.makeDir('/tmp/dir/sub/deeper'), false)
const entries = await sbx.files.list('/tmp/dir')
eq('list shows the entries', entries.map((e) => [e.name, e.type, e.path]).sort(),
  [['a.txt', 'file', '/tmp/dir/a.txt'], ['sub', 'dir', '/tmp/dir/sub']])
eq('list gives sizes', entries.find((e) => e.name === 'a.txt').size, 14)
const deep = await sbx.files.list('/tmp/dir', { depth: 3 })
eq('list with depth goes down', deep.map((e) => e.path).sort(), ['/tmp/dir/a.txt', '/tmp/dir/sub', '/tmp/dir/sub/deeper'])
const moved = await sbx.files.rename('/tmp/dir/a.txt', '/tmp/dir/sub/b.txt')
eq('rename answers the new path', moved.path, '/tmp/dir/sub/b.txt')
eq('exists: the old path is gone', await sbx.files.exists('/tmp/dir/a.txt'), false)
eq('exists: the new path is there', await sbx.files.exists('/tmp/dir/sub/b.txt'), true)
eq('the renamed file kept its data', await sbx.files.read('/tmp/dir/sub/b.txt'), 'contents of a\n')
const info = await sbx.files.getInfo('/tmp/dir/sub')
eq('getInfo of a directory', [info.type, info.name, info.permissions], ['dir', 'sub', 'drwxr-xr-x'])
eq('getInfo names its owner and group', [info.owner, info.group], ['root', 'root'])
await sbx.files.remove('/tmp/dir/sub')

// As another user, the kernel's permission checks decide, and what the
// user makes is theirs.
const failure = async (fn) => {
  try {
    await fn()
    return 'no error'
  } catch (err) {
    return String(err && err.message)
  }
}
const listRoot = await failure(() => sbx.files.list('/root', { user: 'nobody' }))
check('nobody may not list /root: permission_denied', listRoot.includes('permission_denied'), listRoot)
const readShadow = await failure(() => sbx.files.read('/etc/shadow', { user: 'nobody' }))
check('nobody may not read /etc/shadow: 403', readShadow.startsWith('403'), readShadow)
await sbx.files.write('/tmp/nobodys.txt', 'n', { user: 'nobody' })
const nobodys = await sbx.files.getInfo('/tmp/nobodys.txt')
eq('a file nobody writes is nobody\'s', [nobodys.owner, nobodys.group], ['nobody', 'nogroup'])
eq('remove takes the tree', await sbx.files.exists('/tmp/dir/sub/b.txt'), false)
await throws('reading a missing file', () => sbx.files.read('/tmp/nope'), NotFoundError)
await throws('listing a missing directory', () => sbx.files.list('/tmp/nope'), NotFoundError)
await throws('removing a missing file', () => sbx.files.remove('/tmp/nope'), NotFoundError)

// A watch sees a file that a command makes.
await sbx.files.makeDir('/tmp/watched')
const events = []
const watch = await sbx.files.watchDir('/tmp/watched', (e) => events.push(e))
await sbx.commands.run('echo x > /tmp/watched/made.txt')
const watchUntil = Date.now() + 60_000
while (!events.some((e) => e.name === 'made.txt') && Date.now() < watchUntil) await new Promise((res) => setTimeout(res, 50))
check('watchDir sees a file a command made', events.some((e) => e.name === 'made.txt' && e.type === 'create'), JSON.stringify(events))
await watch.stop()

// 10 MiB each way, checked by sha256 on both sides.
const big = randomBytes(10 << 20)
await sbx.files.write('/tmp/big.bin', big)
const inside = await sbx.commands.run('sha256sum /tmp/big.bin')
eq('the upload arrived whole', inside.stdout.split(' ')[0], sha256(big))
const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes' })
eq('the download is as long', back.length, big.length)
eq('the download is the same', sha256(back), sha256(big))
await sbx.files.write('/tmp/octet.bin', big.subarray(0, 1 << 20), { useOctetStream: true })
eq('an octet-stream upload arrives whole', (await sbx.commands.run('sha256sum /tmp/octet.bin')).stdout.split(' ')[0],
  sha256(big.subarray(0, 1 << 20)))

// The sandbox has a loopback of its own: the server's address is not
// reachable from it.
const port = new URL(process.env.E2B_API_URL).port
const dial = await sbx.commands.run(`python3 -c '
import socket
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("127.0.0.1", ${port}))
    print("connected")
except OSError as e:
    print("refused", e.errno)
'`)
check('the sandbox cannot reach moat serve', dial.stdout.startsWith('refused'), dial.stdout)

// A port the sandbox listens on is reached through the server, as E2B's
// proxy reaches it: getHost(port)'s name as the Host (the server runs
// with --domain moat.test), or E2B_SANDBOX_URL with the sandbox's id and
// the port in headers. The server's own port stays unreachable from the
// sandbox (above): the server connects inside the sandbox's network.
await sbx.files.write('/tmp/www/index.html', 'served from the sandbox\n')
const web = await sbx.commands.run('cd /tmp/www && exec python3 -m http.server 8000 --bind 127.0.0.1', { background: true })
const host = sbx.getHost(8000)
eq('getHost names the port and the sandbox', host, `8000-${sbx.sandboxId}.moat.test`)
const viaHost = (name, path) => new Promise((resolve, reject) => {
  http.get({ host: '127.0.0.1', port, path, headers: { Host: name } }, (res) => {
    let body = ''
    res.setEncoding('utf8')
    res.on('data', (d) => { body += d })
    res.on('end', () => resolve({ status: res.statusCode, body }))
  }).on('error', reject)
})
let page = await viaHost(host, '/index.html')
for (let i = 0; i < 100 && page.status !== 200; i++) {
  await new Promise((res) => setTimeout(res, 100)) // until http.server listens
  page = await viaHost(host, '/index.html')
}
eq('a page the sandbox serves comes through getHost', page.body, 'served from the sandbox\n')
const viaHeaders = await fetch(`${process.env.E2B_SANDBOX_URL}/index.html`,
  { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' } })
eq('and through E2B_SANDBOX_URL', await viaHeaders.text(), 'served from the sandbox\n')
eq('a port nothing listens on answers 502', (await viaHost(sbx.getHost(8001), '/')).status, 502)
await web.kill()

// A second sandbox sees none of the first's files or processes.
const marker = await sbx.commands.run('sleep 4321', { background: true })
const procs = 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "'
check('a sandbox sees its own processes', (await sbx.commands.run(procs)).stdout.includes('sleep 4321'), 'no sleep 4321')
const other = await Sandbox.create('base', { timeoutMs: 60_000, metadata: { suite: 'e2b', tag: tag + '-other' } })
eq('another sandbox has its own files', await other.files.exists('/tmp/big.bin'), false)
const theirs = await other.commands.run(procs)
check('another sandbox has its own processes', !theirs.stdout.includes('sleep 4321'), theirs.stdout)
await marker.kill()

// Each sandbox's envd takes that sandbox's access token alone: not
// another's, nor none.
const envdList = (id, token) => fetch(`${process.env.E2B_SANDBOX_URL}/process.Process/List`, {
  method: 'POST',
  body: '{}',
  headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': id, ...(token ? { 'X-Access-Token': token } : {}) },
})
check('the sandboxes have tokens of their own', sbx.envdAccessToken && other.envdAccessToken &&
  sbx.envdAccessToken !== other.envdAccessToken, 'missing or equal')
eq('envd takes its own sandbox\'s token', (await envdList(sbx.sandboxId, sbx.envdAccessToken)).status, 200)
eq('envd refuses another sandbox\'s token with 401', (await envdList(sbx.sandboxId, other.envdAccessToken)).status, 401)
eq('envd refuses a wrong token with 401', (await envdList(other.sandboxId, 'wrong-token')).status, 401)
eq('envd refuses a request without a token with 401', (await envdList(other.sandboxId)).status, 401)

// Pause and connect: a paused sandbox is listed and described as paused,
// its processes stop where they are, and connect runs them on.
const sleep = (ms) => new Promise((res) => setTimeout(res, ms))
const ticker = await sbx.commands.run('i=0; while :; do i=$((i+1)); echo $i > /tmp/ticks; sleep 0.05; done', { background: true })
await sleep(500)
const ticksBefore = Number((await sbx.files.read('/tmp/ticks')).trim())
eq('pause pauses', await sbx.pause(), true)
eq('pausing a paused sandbox answers false', await Sandbox.pause(sbx.sandboxId), false)
eq('getInfo says paused', (await sbx.getInfo()).state, 'paused')
eq('list by state finds it paused', (await Sandbox.list({ query: { state: ['paused'], metadata: { tag } } }).nextItems()).map((s) => s.sandboxId), [sbx.sandboxId])
eq('and not running', (await Sandbox.list({ query: { state: ['running'], metadata: { tag } } }).nextItems()).length, 0)
await sleep(1000)
const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120_000 })
eq('connect resumes it', (await again.getInfo()).state, 'running')
const ticksAfter = Number((await again.files.read('/tmp/ticks')).trim())
check('nothing ran while it was paused', ticksAfter - ticksBefore < 10, `${ticksBefore} -> ${ticksAfter} over a 1 s pause`)
await sleep(500)
const ticksLater = Number((await again.files.read('/tmp/ticks')).trim())
check('its processes run on after connect', ticksLater > ticksAfter, `${ticksAfter} -> ${ticksLater}`)
eq('the ticker is killed', await ticker.kill(), true)
const [metric] = await sbx.getMetrics()
check('getMetrics gives the sandbox\'s CPU and memory', metric && metric.cpuCount > 0 && metric.cpuUsedPct >= 0 &&
  metric.memUsed > 0 && metric.memTotal >= metric.memUsed && metric.timestamp instanceof Date, JSON.stringify(metric))
eq('getMetrics counts the server\'s limits: 2 CPUs', metric.cpuCount, 2)
eq('and 512 MiB', metric.memTotal, 512 * 2 ** 20)

// Listing by metadata, timeouts, kill.
const mine = await Sandbox.list({ query: { metadata: { tag } } }).nextItems()
eq('list by metadata finds this sandbox alone', mine.map((s) => s.sandboxId), [sbx.sandboxId])
eq('its metadata come back', mine[0].metadata, { suite: 'e2b', tag })
const both = await Sandbox.list({ query: { metadata: { suite: 'e2b' } } }).nextItems()
eq('list by shared metadata finds both', both.map((s) => s.sandboxId).sort(), [sbx.sandboxId, other.sandboxId].sort())
await other.setTimeout(1_000)
const deadline = Date.now() + 60_000
while (await other.isRunning() && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100))
eq('a sandbox whose timeout passed is gone', await other.isRunning(), false)
const infoBefore = await sbx.getInfo()
eq('getInfo names the template', infoBefore.templateId, 'base')
eq('kill kills', await sbx.kill(), true)
eq('a killed sandbox is not running', await sbx.isRunning(), false)
eq('killing it again finds nothing', await Sandbox.kill(sbx.sandboxId), false)
const gone = await Sandbox.list({ query: { metadata: { tag } } }).nextItems()
eq('a killed sandbox is not listed', gone.length, 0)

// The API key is checked.
await throws('a wrong API key', () => Sandbox.create('base', { apiKey: 'wrong-key' }), AuthenticationError)
await throws('a wrong API key on list', () => Sandbox.list({ apiKey: 'wrong-key' }).nextItems(), AuthenticationError)

finish()
