// The E2B JavaScript SDK's file calls, unmodified, against `moat serve` on
// a template that holds one static program (its init) and nothing else:
// no shell, no coreutils, no /etc/passwd. Every result is checked, and the
// script ends with status 1 if one is wrong. The test that runs this sets
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY.
import { Sandbox, NotFoundError, InvalidArgumentError, ALL_TRAFFIC } from 'e2b'
import { randomBytes } from 'node:crypto'

import { check, eq, throws, sha256, finish } from './checks.mjs'

const sbx = await Sandbox.create('bare', { timeoutMs: 120_000 })

// Nothing in the image runs a command.
let ran = true
try {
  await sbx.commands.run('true')
} catch (err) {
  ran = false
}
check('the image has no shell: a command cannot run', !ran, 'a command ran')

const w = await sbx.files.write('/tmp/dir/a.txt', 'contents of a\n')
eq('write answers the path', [w.path, w.name], ['/tmp/dir/a.txt', 'a.txt'])
eq('read gives back what was written', await sbx.files.read('/tmp/dir/a.txt'), 'contents of a\n')
const several = await sbx.files.write([
  { path: '/tmp/dir/one', data: '1' },
  { path: '/tmp/dir/two', data: '22' },
])
eq('one request writes several files', several.map((i) => i.path).sort(), ['/tmp/dir/one', '/tmp/dir/two'])
eq('each has its data', [await sbx.files.read('/tmp/dir/one'), await sbx.files.read('/tmp/dir/two')], ['1', '22'])
eq('makeDir makes a directory', await sbx.files.makeDir('/tmp/dir/sub/deeper'), true)
eq('makeDir of an existing one is false', await sbx.files.makeDir('/tmp/dir/sub/deeper'), false)
const entries = await sbx.files.list('/tmp/dir')
eq('list shows the entries', entries.map((e) => [e.name, e.type, e.path]).sort(),
  [['a.txt', 'file', '/tmp/dir/a.txt'], ['one', 'file', '/tmp/dir/one'], ['sub', 'dir', '/tmp/dir/sub'], ['two', 'file', '/tmp/dir/two']])
eq('list gives sizes', entries.find((e) => e.name === 'a.txt').size, 14)
const deep = await sbx.files.list('/tmp/dir', { depth: 3 })
eq('list with depth goes down', deep.map((e) => e.path).filter((p) => p.includes('sub')), ['/tmp/dir/sub', '/tmp/dir/sub/deeper'])
const moved = await sbx.files.rename('/tmp/dir/a.txt', '/tmp/other/b.txt')
eq('rename answers the new path, making its directory', moved.path, '/tmp/other/b.txt')
eq('exists: the old path is gone', await sbx.files.exists('/tmp/dir/a.txt'), false)
eq('the renamed file kept its data', await sbx.files.read('/tmp/other/b.txt'), 'contents of a\n')
const info = await sbx.files.getInfo('/tmp/dir/sub')
eq('getInfo of a directory', [info.type, info.name, info.permissions], ['dir', 'sub', 'drwxr-xr-x'])
eq('with no /etc/passwd, ids are numbers', [info.owner, info.group], ['0', '0'])
// The names come from the sandbox's own files, read at most a second
// before.
await sbx.files.write('/etc/passwd', 'toor:x:0:0:root:/:/nonexistent\n')
await sbx.files.write('/etc/group', 'wheel:x:0:\n')
await new Promise((res) => setTimeout(res, 1100))
const named = await sbx.files.getInfo('/tmp/dir/sub')
eq('the sandbox\'s /etc/passwd and /etc/group name them', [named.owner, named.group], ['toor', 'wheel'])
await sbx.files.remove('/tmp/dir')
eq('remove takes the tree', await sbx.files.exists('/tmp/dir/sub/deeper'), false)
check('a /proc file, of size 0, reads whole', (await sbx.files.read('/proc/1/status')).includes('Pid:'), 'no Pid: line')
await throws('reading a missing file', () => sbx.files.read('/tmp/nope'), NotFoundError)
await throws('reading a directory', () => sbx.files.read('/tmp'), InvalidArgumentError)
await throws('listing a missing directory', () => sbx.files.list('/tmp/nope'), NotFoundError)
await throws('listing a file', () => sbx.files.list('/tmp/other/b.txt'), InvalidArgumentError)
await throws('removing a missing file', () => sbx.files.remove('/tmp/nope'), NotFoundError)

// A watch sees a file that another call makes.
await sbx.files.makeDir('/tmp/watched')
const events = []
const watch = await sbx.files.watchDir('/tmp/watched', (e) => events.push(e))
await sbx.files.write('/tmp/watched/made.txt', 'x')
const watchUntil = Date.now() + 60_000
while (!events.some((e) => e.name === 'made.txt') && Date.now() < watchUntil) await new Promise((res) => setTimeout(res, 50))
check('watchDir sees a file that is written', events.some((e) => e.name === 'made.txt' && e.type === 'create'), JSON.stringify(events))
await watch.stop()

// 4 MiB each way, checked by sha256.
const big = randomBytes(4 << 20)
await sbx.files.write('/tmp/big.bin', big)
eq('the upload is as long', (await sbx.files.getInfo('/tmp/big.bin')).size, big.length)
const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes' })
eq('the download is the same', sha256(back), sha256(big))
await sbx.files.write('/tmp/octet.bin', big.subarray(0, 1 << 20), { useOctetStream: true })
eq('an octet-stream upload arrives whole', sha256(await sbx.files.read('/tmp/octet.bin', { format: 'bytes' })),
  sha256(big.subarray(0, 1 << 20)))

eq('kill kills', await sbx.kill(), true)

// Networks, as E2B's API has them: one that denies all is loopback alone;
// one that denies all but allowOut's entries gets the user-space network
// with that allowlist (nothing here reaches out: the image has nothing to
// run; integration/e2b_network_test.go checks what is reached); a denyOut
// of some addresses with internet access, an allowlist's opposite, is
// refused, not ignored.
const closed = await Sandbox.create('bare', { timeoutMs: 60_000, allowInternetAccess: false, network: { denyOut: [ALL_TRAFFIC] } })
eq('a sandbox without internet access is made', await closed.isRunning(), true)
await closed.kill()
const listed = await Sandbox.create('bare', { timeoutMs: 60_000, network: { denyOut: [ALL_TRAFFIC], allowOut: ['allowed.test', '10.214.0.1:80'] } })
eq('a sandbox with an allowlist is made', await listed.isRunning(), true)
await listed.kill()
let refusal = 'no error'
try {
  await Sandbox.create('bare', { allowInternetAccess: true, network: { denyOut: ['8.8.8.8'] } })
} catch (err) {
  refusal = String(err && err.message)
}
check('a network that denies some addresses and allows the rest is refused with 400', refusal.startsWith('400') && refusal.includes('denyOut'), refusal)

finish()
