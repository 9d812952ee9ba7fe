#!/usr/bin/env node
/**
 * The checker can fail (issue 49): each rule of the money path broken again on purpose, in a copy
 * of the repository, and the bounded checker (money.soak.test.ts) run there with CI's budget
 * (MODEL_RUNS / MODEL_MINUTES as `npm run test:soak` sets them: the defaults) until it finds the
 * break, seed after seed. Prints a table: mutant, found or not, the rule broken, histories and
 * minutes until found.
 *
 *   npm run test:mutants                      # every mutant, seeds 49, then 7, then 21
 *   MUTANTS=a,e MUTANT_SEEDS=49 npm run test:mutants
 *
 * A mutant is a text replacement that must match exactly once (else the script fails: the code it
 * aimed at moved). The copy is the repository's tracked files (`git ls-files`, as they are in the
 * working tree) with node_modules linked; it is removed afterwards (MUTANTS_KEEP=1 keeps it).
 */
import { spawnSync } from 'node:child_process';
import {
	cpSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const generate = 'nodes/ImagePack/actions/image/generate';

const MUTANTS = [
	{
		id: 'a',
		name: 'the account left out of the send value',
		file: `${generate}/identity.ts`,
		from: 'send: `send ${place.run} ${askOf(digest, place.fingerprint)} ${occurrence}`,',
		to: "send: `send ${place.run} ${askOf(digest, '')} ${occurrence}`,",
	},
	{
		id: 'b',
		name: 'Clear Idempotency Key per try (its once-per-run mark never found)',
		file: `${generate}/verdict.ts`,
		from: 'const cleared = facts.clearKey === true && !recorded.keyCleared;',
		to: 'const cleared = facts.clearKey === true;',
	},
	{
		id: 'c',
		name: "a key not checked on a retry's try",
		file: `${generate}/verdict.ts`,
		from: "const key = !recorded.key || cleared ? 'unused'",
		to: "const key = !recorded.key || cleared || claim === 'try' ? 'unused'",
	},
	{
		id: 'd',
		name: "the asking left in (a retry's asked values not taken out)",
		file: `${generate}/durable.ts`,
		from: 'const notSent = [...asked.new, ...asked.processed.filter((value) => left.has(value))];',
		to: 'const notSent: string[] = [];',
	},
	{
		id: 'e',
		name: "a loop's batches read the sends' row again (no once-per-run mark)",
		file: `${generate}/durable.ts`,
		from: 'if (openedHere.has(here)) return;',
		to: '',
	},
];

const only = process.env.MUTANTS?.split(',').filter(Boolean);
const seeds = (process.env.MUTANT_SEEDS ?? '49,7,21').split(',').map(Number);

function copyRepository() {
	const to = mkdtempSync(join(tmpdir(), 'imagepack-mutant-'));
	const files = spawnSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
		.stdout.split('\0')
		.filter(Boolean);
	for (const file of files) {
		mkdirSync(dirname(join(to, file)), { recursive: true });
		try {
			cpSync(join(root, file), join(to, file));
		} catch {
			// A tracked file deleted in the working tree.
		}
	}
	symlinkSync(join(root, 'node_modules'), join(to, 'node_modules'));
	return to;
}

function mutate(folder, mutant) {
	const path = join(folder, mutant.file);
	const text = readFileSync(path, 'utf8');
	const matches = text.split(mutant.from).length - 1;
	if (matches !== 1) {
		throw new Error(
			`mutant ${mutant.id}: ${matches} matches in ${mutant.file}, expected exactly 1`,
		);
	}
	writeFileSync(path, text.replace(mutant.from, mutant.to));
}

/** One bounded run at CI's budget; what it found. */
function check(folder, seed) {
	const started = Date.now();
	const result = spawnSync(
		'npx',
		['jest', '-c', 'jest.soak.config.js', '--ci', 'test/model/money'],
		{
			cwd: folder,
			encoding: 'utf8',
			env: { ...process.env, MODEL_SEED: String(seed), MODEL_SHRINK: '0', MODEL_PATH: '' },
			maxBuffer: 64 * 1024 * 1024,
		},
	);
	delete result.env;
	const output = `${result.stdout}\n${result.stderr}`;
	const upTo = /(\d+) histories in ([\d.]+) min \((\d+) a minute\)( up to the first break)?/.exec(
		output,
	);
	const rule = /Promises broken:\s*\n\s*- ([^\n]+)/.exec(output)?.[1];
	const thrown =
		!rule && result.status !== 0 ? /●[^\n]*\n\n\s*([^\n]+)/.exec(output)?.[1] : undefined;
	return {
		found: Boolean(rule),
		rule: rule ?? thrown ?? '',
		histories: upTo ? Number(upTo[1]) : undefined,
		minutes: upTo ? Number(upTo[2]) : undefined,
		wall: (Date.now() - started) / 60_000,
		status: result.status,
	};
}

const rows = [];
for (const mutant of MUTANTS.filter((m) => !only || only.includes(m.id))) {
	const folder = copyRepository();
	try {
		mutate(folder, mutant);
		const tries = [];
		for (const seed of seeds) {
			const result = check(folder, seed);
			tries.push({ seed, ...result });
			console.error(
				`mutant ${mutant.id} seed ${seed}: ${result.found ? 'found' : 'not found'} (${result.histories ?? '?'} histories, ${result.minutes ?? '?'} min) ${result.rule.slice(0, 120)}`,
			);
			if (result.found || (result.status !== 0 && !result.found)) break;
		}
		const last = tries.at(-1);
		const before = tries.slice(0, -1);
		rows.push({
			mutant: `(${mutant.id}) ${mutant.name}`,
			found: last.found
				? `yes, seed ${last.seed}`
				: last.status === 0
					? 'no'
					: `error (${last.rule})`,
			rule: last.found ? last.rule.split(':')[0] : '',
			histories: [...before.map((t) => t.histories ?? 0), last.histories ?? 0].reduce(
				(a, b) => a + b,
				0,
			),
			minutes: [...before, last].reduce((sum, t) => sum + (t.minutes ?? 0), 0).toFixed(2),
			seeds: tries.map((t) => t.seed).join(', '),
		});
	} finally {
		if (!process.env.MUTANTS_KEEP) rmSync(folder, { recursive: true, force: true });
		else console.error(`kept ${folder}`);
	}
}

const header = ['Mutant', 'Found', 'Rule broken', 'Histories until found', 'Minutes', 'Seeds run'];
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
for (const row of rows) {
	console.log(
		`| ${row.mutant} | ${row.found} | ${row.rule} | ${row.histories} | ${row.minutes} | ${row.seeds} |`,
	);
}
process.exitCode = rows.every((row) => row.found.startsWith('yes')) ? 0 : 1;
