// The E2B SDK against `moat serve` over HTTPS (--tls-cert, --tls-key):
// E2B_API_URL and E2B_SANDBOX_URL are https:// URLs, and node trusts the
// test's certificate through NODE_EXTRA_CA_CERTS. Every result is checked.
import { Sandbox } from 'e2b'
import { check, eq, finish } from './checks.mjs'

check('the API is reached over HTTPS', process.env.E2B_API_URL.startsWith('https://'), process.env.E2B_API_URL)
const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
const r = await sbx.commands.run('echo over tls')
eq('a command runs through envd over HTTPS', r.stdout, 'over tls\n')
await sbx.files.write('/tmp/tls.txt', 'sealed')
eq('a file goes in and out over HTTPS', await sbx.files.read('/tmp/tls.txt'), 'sealed')
eq('kill kills', await sbx.kill(), true)
finish()
