// A file server in a child process for the download scripts (download-buffers.mjs,
// download-collections.mjs): its buffers are not counted in the measuring process. Serves `bytes`
// random bytes as a PNG on any path.
import { spawn } from 'node:child_process';

export async function startFileServer(bytes) {
	const code = `
const body = require('node:crypto').randomBytes(${bytes});
require('node:http').createServer((req, res) => {
	res.writeHead(200, { 'content-type': 'image/png', 'content-length': body.length });
	res.end(body);
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
	const server = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
	const port = await new Promise((resolve) => server.stdout.once('data', (data) => resolve(Number(String(data).trim()))));
	return { url: `http://127.0.0.1:${port}/file.png`, close: () => server.kill() };
}
