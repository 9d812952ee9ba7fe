/**
 * The link check (tools/check-links.mjs): the repository passes it, and it fails on a wrong name of
 * each kind it checks, in a small repository made for the test.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { checkLinks } from '../../tools/check-links.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function repository(files) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'links-'));
	for (const [name, text] of Object.entries(files)) {
		fs.mkdirSync(path.join(dir, path.dirname(name)), { recursive: true });
		fs.writeFileSync(path.join(dir, name), text);
	}
	return dir;
}

const correct = {
	'README.md':
		'# Title\n\n## Retries and stops\n\nSee [retries](docs/retry.md#tests) and [above](#retries-and-stops), `tools/sandbox.mjs`.\n',
	'docs/retry.md':
		'# Retries\n\n## Tests\n\nThe table is `test/unit/verdict.test.ts`; the run is [here](../README.md).\n',
	'test/unit/verdict.test.ts':
		'// The rule lives in generate/verdict.ts (see docs/retry.md).\nconst url = "http://x/y.md";\n',
	'nodes/generate/verdict.ts':
		'/** Pure: the verdict. Its table: verdict.test.ts. */\nexport const verdict = 1;\n',
	'tools/sandbox.mjs': '',
};

describe('tools/check-links.mjs', () => {
	it('finds nothing wrong in this repository', () => {
		assert.deepEqual(checkLinks(root), []);
	});

	it('passes a small repository whose names all exist', () => {
		assert.deepEqual(checkLinks(repository(correct)), []);
	});

	for (const [what, file, text, expected] of [
		[
			'a link to a missing page',
			'README.md',
			'See [x](docs/missing.md).\n',
			/README\.md:6: docs\/missing\.md: no such file/,
		],
		[
			'a link to a missing heading',
			'README.md',
			'See [x](docs/retry.md#no-such-part).\n',
			/no heading #no-such-part/,
		],
		[
			'a link out of the repository',
			'docs/retry.md',
			'The [API](../../shared/api/image-api.md).\n',
			/points outside the repository/,
		],
		[
			'a path in a page that does not exist',
			'docs/retry.md',
			'Run `tools/old-installer.mjs`.\n',
			/tools\/old-installer\.mjs: no such file/,
		],
		[
			'a file name in a comment that exists nowhere',
			'nodes/generate/verdict.ts',
			'// Its cases: replay.test.ts.\n',
			/verdict\.ts:3: replay\.test\.ts: no file of that name/,
		],
		[
			'a path in a comment under a top-level folder',
			'test/unit/verdict.test.ts',
			'/' + '* see test/integration/hostile.test.ts *' + '/\n',
			/test\/integration\/hostile\.test\.ts: no such file/,
		],
	]) {
		it(`fails on ${what}`, () => {
			const problems = checkLinks(repository({ ...correct, [file]: correct[file] + text }));
			assert.equal(problems.length, 1, problems.join('\n'));
			assert.match(problems[0], expected);
		});
	}

	it('reads only comments in code: a string naming a missing file is not a reference', () => {
		const problems = checkLinks(
			repository({ ...correct, 'nodes/generate/verdict.ts': "const name = 'missing-file.ts';\n" }),
		);
		assert.deepEqual(problems, []);
	});
});
