#!/usr/bin/env node
/**
 * The checker can fail (issues 49, 56): realistic mistakes in Generate's money path, each made on
 * purpose in a copy of the repository, and the bounded checker (money.soak.test.ts) run there at
 * CI's budget (each seed: MODEL_RUNS histories or MODEL_MINUTES, the defaults `npm run test:money`
 * uses) on CI's seeds (49, then the seed of the commit). Prints a table: mutant, found or not, the
 * rule broken, histories and minutes until found.
 *
 *   npm run test:mutants                         # every mutant, the committed code (HEAD)
 *   MUTANTS=a,e MUTANT_SEEDS=49 npm run test:mutants
 *   MUTANTS_TREE=worktree npm run test:mutants   # the working tree's files instead of HEAD's
 *
 * The checker runs with MODEL_TALLY=1 (it never stops, and prints each broken history's rules and
 * replay): the unmutated code is run first at each seed; a history of the mutant's run that breaks
 * a rule the unmutated code did not break there is a candidate, and its replay is run three times
 * in the mutant's copy and in an unmutated one: found when it fails every time on the mutant and
 * never on the unmutated code. So a break the code has already (an `it.failing` in
 * classes.soak.test.ts), or one that depends on timing, neither hides a mutant's nor counts as one.
 *
 * A mutant is a text replacement that must match exactly once (else the script fails: the code it
 * aimed at moved). The copy is HEAD's tracked files (`git archive`), or the working tree's
 * (`git ls-files`), with node_modules linked; it is removed afterwards (MUTANTS_KEEP=1 keeps it).
 */
import { execSync, spawnSync } from 'node:child_process';
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
		name: "a key's value without its account (one key under two accounts is one generation again)",
		file: `${generate}/ledger.ts`,
		from: 'key: (node: string, fingerprint: string, key: string) => `key ${node} ${fingerprint} ${key}`,',
		to: 'key: (node: string, fingerprint: string, key: string) => `key ${node} ${key}`,',
	},
	{
		id: 'b',
		name: 'Resend Uncertain Generations on resends whatever finds its key open or used (a new execution too)',
		file: `${generate}/verdict.ts`,
		from: "const resending = claim === 'again' && facts.memo?.kind === 'uncertain';",
		to: 'const resending = facts.resendUncertain;',
	},
	{
		id: 'c',
		name: 'a resend not once per saved record (another retry of it sent it: resent again)',
		file: `${generate}/verdict.ts`,
		from: "if (claim === 'again' && again) {",
		to: "if (claim === 'again' && again && !resending) {",
	},
	{
		id: 'd',
		name: 'a Retry On Fail try resends with the option on',
		file: `${generate}/verdict.ts`,
		from: "if (!sameExecution && facts.resendUncertain) return { kind: 'claim', claim: 'again' };",
		to: "if (facts.resendUncertain) return { kind: 'claim', claim: 'again' };",
	},
	{
		id: 'e',
		name: 'an item a stopped attempt sent counts nothing under Max Credits per Execution',
		file: `${generate}/credits.ts`,
		from: 'this.context[LEDGER_KEY] = this.spent + credits;',
		to: 'this.context[LEDGER_KEY] = this.spent;',
	},
	{
		id: 'f',
		name: 'a Stop between items drops the paid items waiting for their downloads',
		file: `${generate}/execute.ts`,
		from: "if (later?.size && code === 'cancelled' && charge === 'not_sent') {",
		to: "if (later?.size && code === 'cancelled' && charge === 'may_have_been_charged') {",
	},
	{
		id: 'g',
		name: "an account's proof taken for every key (not per pair of keys)",
		file: `${generate}/execute.ts`,
		from: "const pair = `${memo.fingerprint ?? ''} ${item.identity.fingerprint}`;",
		to: "const pair = `${memo.fingerprint ?? ''}`;",
	},
	// (h), "a key's open mark taken out at its answer", is retired: open marks go out in one store
	// call at the run's end, so it differed from the code only where (i) does (test/model/README.md).
	{
		id: 'i',
		name: "a key's open mark taken out when its run ends without handing its output over",
		file: `${generate}/execute.ts`,
		from: 'for (const answered of run.delivered) await answered(run.handedOver);',
		to: 'for (const answered of run.delivered) await answered(true);',
	},
	{
		id: 'j',
		name: 'a twin row told its key used whatever its twin in flight came to',
		file: `${generate}/claims.ts`,
		from: "if (twin === 'refused' || twin === 'not sent') {",
		to: 'if (twin === undefined && twin !== undefined) {',
	},
];

const only = process.env.MUTANTS?.split(',').filter(Boolean);

/** CI's seeds: 49 and the commit's (money.soak.test.ts `commitSeed`). */
function ciSeeds() {
	const head = execSync('git rev-parse HEAD', { cwd: root, encoding: 'utf8' }).trim();
	return [49, parseInt(head.slice(0, 7), 16)];
}
const seeds = process.env.MUTANT_SEEDS
	? process.env.MUTANT_SEEDS.split(',').map(Number)
	: ciSeeds();

/** Every copy is of one commit: HEAD when the script started (others commit meanwhile). */
const commit = execSync('git rev-parse HEAD', { cwd: root, encoding: 'utf8' }).trim();

function copyRepository() {
	const to = mkdtempSync(join(tmpdir(), 'imagepack-mutant-'));
	if (process.env.MUTANTS_TREE === 'worktree') {
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
	} else {
		execSync(`git archive ${commit} | tar -x -C ${JSON.stringify(to)}`, { cwd: root });
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

/** One bounded run at CI's budget: each broken history's rules, and how long it ran. */
function check(folder, seed) {
	const started = Date.now();
	const result = spawnSync(
		'npx',
		['jest', '-c', 'jest.soak.config.js', '--ci', 'test/model/money'],
		{
			cwd: folder,
			encoding: 'utf8',
			env: {
				...process.env,
				MODEL_SEARCH: '1', // jest.soak.config.js leaves the search out otherwise
				MODEL_SEED: String(seed),
				MODEL_TALLY: '1',
				MODEL_TALLY_FULL: '1',
				MODEL_PATH: '',
			},
			maxBuffer: 256 * 1024 * 1024,
		},
	);
	const output = `${result.stdout}\n${result.stderr}`;
	const broken = new Map();
	for (const [, history, rules, first, rest] of output.matchAll(
		/tally \d+ (\d+) ([^\n]*?) :: ([^\n]*)\n([\s\S]*?)\n\s*\]\);/g,
	)) {
		const replay = /await runHistory\([\s\S]*$/.exec(rest)?.[0];
		broken.set(Number(history), {
			rules: rules.split('|'),
			first,
			replay: replay ? `${replay}\n]);` : undefined,
		});
	}
	const ran = /seed \d+: (\d+) histories in ([\d.]+) min/.exec(output);
	return {
		broken,
		histories: ran ? Number(ran[1]) : undefined,
		minutes: ran ? Number(ran[2]) : (Date.now() - started) / 60_000,
		status: result.status,
		tail: output.slice(-2000),
	};
}

/** Runs a replay three times in a folder (jest, one file): how many runs broke a promise. */
function replayFails(folder, replay) {
	const file = join(folder, 'test/model/zz-confirm.soak.test.ts');
	writeFileSync(
		file,
		[
			"import { useEmulator } from '../harness/emulator';",
			"import { NewExecution, Restart, RetryAfterKill, RetryExecution, runHistory } from './history';",
			'const emulator = useEmulator();',
			'void [NewExecution, Restart, RetryAfterKill, RetryExecution];',
			...[1, 2, 3].map((n) => `it('replay ${n}', async () => {\n${replay}\n});`),
		].join('\n'),
	);
	const result = spawnSync(
		'npx',
		['jest', '-c', 'jest.soak.config.js', '--ci', 'test/model/zz-confirm'],
		{
			cwd: folder,
			encoding: 'utf8',
			maxBuffer: 64 * 1024 * 1024,
		},
	);
	rmSync(file, { force: true });
	const failed = /Tests:\s+(\d+) failed/.exec(`${result.stdout}\n${result.stderr}`);
	return failed ? Number(failed[1]) : 0;
}

/**
 * The first history where the mutant breaks a rule the unmutated code did not break there, and
 * whose replay fails three times out of three on the mutant and never on the unmutated code.
 */
function firstNew(base, mutant, folder, unmutated) {
	let tried = 0;
	for (const [history, { rules, first, replay }] of [...mutant.broken].sort(
		(x, y) => x[0] - y[0],
	)) {
		const before = base.broken.get(history)?.rules ?? [];
		const fresh = rules.filter((rule) => !before.includes(rule));
		if (!fresh.length || !replay) continue;
		if (++tried > 4) break;
		const onMutant = replayFails(folder, replay);
		const onCode = replayFails(unmutated, replay);
		console.error(
			`  candidate history ${history} (${fresh[0]}): fails ${onMutant}/3 mutated, ${onCode}/3 unmutated`,
		);
		if (onMutant === 3 && onCode === 0) return { history, rule: fresh[0], first };
	}
	return undefined;
}

const baseline = new Map();
const unmutated = copyRepository();
{
	const folder = unmutated;
	{
		for (const seed of seeds) {
			const base = check(folder, seed);
			if (base.status !== 0)
				throw new Error(`the unmutated checker failed at seed ${seed}:\n${base.tail}`);
			baseline.set(seed, base);
			console.error(
				`unmutated, seed ${seed}: ${base.broken.size} of ${base.histories} histories break a rule (${[...new Set([...base.broken.values()].flatMap((b) => b.rules))].join(', ') || 'none'})`,
			);
		}
	}
}

const rows = [];
for (const mutant of MUTANTS.filter((m) => !only || only.includes(m.id))) {
	const folder = copyRepository();
	try {
		mutate(folder, mutant);
		const tries = [];
		for (const seed of seeds) {
			const result = check(folder, seed);
			const found = firstNew(baseline.get(seed), result, folder, unmutated);
			tries.push({ seed, ...result, found });
			console.error(
				`mutant ${mutant.id} seed ${seed}: ${found ? `found at history ${found.history}: ${found.first.slice(0, 160)}` : `not found (${result.histories ?? '?'} histories, ${result.minutes.toFixed(2)} min)`}`,
			);
			if (found || result.status !== 0) break;
		}
		const last = tries.at(-1);
		rows.push({
			mutant: `(${mutant.id}) ${mutant.name}`,
			found: last.found ? `yes, seed ${last.seed}` : last.status === 0 ? 'no' : 'error',
			rule: last.found?.rule ?? '',
			histories: tries
				.slice(0, -1)
				.reduce((sum, t) => sum + (t.histories ?? 0), last.found?.history ?? last.histories ?? 0),
			seeds: tries.map((t) => t.seed).join(', '),
		});
	} finally {
		if (!process.env.MUTANTS_KEEP) rmSync(folder, { recursive: true, force: true });
		else console.error(`kept ${folder}`);
	}
}

const header = ['Mutant', 'Found', 'Rule broken', 'Histories until found', 'Seeds run'];
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
for (const row of rows) {
	console.log(`| ${row.mutant} | ${row.found} | ${row.rule} | ${row.histories} | ${row.seeds} |`);
}
process.exitCode = rows.every((row) => row.found.startsWith('yes')) ? 0 : 1;
rmSync(unmutated, { recursive: true, force: true });
