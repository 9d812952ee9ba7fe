/**
 * Orchestration of the things that are not a plain compile: the emulator, the end-to-end suite in a
 * real n8n, the sandbox, the benchmarks and the verification scan. `n8n-node build` does the build.
 */
const { spawn } = require('node:child_process');

/** Runs a command, inheriting stdio; rejects on a non-zero exit. */
function run(command, args, options = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { stdio: 'inherit', ...options });
		child.on('error', reject);
		child.on('exit', (code, signal) =>
			code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code ?? signal}`)),
		);
	});
}

function emulator() {
	return run(process.execPath, ['--import', 'tsx', 'test/emulator/cli.mjs', ...process.argv.slice(3)]);
}

module.exports = { emulator, run };
