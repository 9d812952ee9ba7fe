// The builds a paired bench compares (durable.bench.mjs, credentials.bench.mjs): the work tree's,
// and an earlier commit's packed from a temporary worktree; and an n8n start that survives losing
// its free port to another process on the machine.
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT, packPackage, runCommand, startN8n } from '../e2e/n8n.mjs';

export async function git(args, cwd = REPO_ROOT) {
	const result = await runCommand('git', args, { cwd });
	if (result.code !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
	return result.stdout.trim();
}

/** Builds and packs the package at `rev` from a temporary worktree (removed again; nothing committed). */
export async function packAt(rev, storage, log, part) {
	const commit = await git(['rev-parse', '--short', `${rev}^{commit}`]);
	const dir = path.join(storage, `${part}-base-${commit}`);
	log(`n8n ${part}: build + pack ${commit} in a temporary worktree`);
	await git(['worktree', 'add', '--detach', dir, commit]);
	try {
		fs.symlinkSync(
			fs.realpathSync(path.join(REPO_ROOT, 'node_modules')),
			path.join(dir, 'node_modules'),
		);
		return { commit, tarball: await packPackage({ cwd: dir }) };
	} finally {
		await git(['worktree', 'remove', '--force', dir]);
	}
}

/** `startN8n`, tried again when another process took its free port first (other n8n runs share the machine). */
export async function startN8nRetrying(options, tries = 3) {
	for (let attempt = 1; ; attempt++) {
		try {
			return await startN8n(options);
		} catch (error) {
			if (attempt >= tries || !/already in use|EADDRINUSE/.test(String(error?.message)))
				throw error;
		}
	}
}
