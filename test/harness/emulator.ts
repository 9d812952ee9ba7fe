/**
 * The emulator for one test file: started before its tests, reset before each (with the stand-in of
 * n8n's deduplication store), closed after, with
 * the transport's retry waits shortened for the file (and restored afterwards).
 */
import { retryPolicy } from '../../nodes/ImagePack/transport/limits';
import { type Emulator, startEmulator } from '../emulator';
import { clearDeduplicationStore } from './deduplication';

/** Returns an object that stands for the running emulator (usable inside tests and hooks). */
export function useEmulator(policy: Partial<typeof retryPolicy> = { backoffMs: 5 }): Emulator {
	let current: Emulator | undefined;
	const saved = { ...retryPolicy };
	beforeAll(async () => {
		current = await startEmulator();
		Object.assign(retryPolicy, policy);
	});
	afterAll(async () => {
		Object.assign(retryPolicy, saved);
		await current?.close();
	});
	beforeEach(async () => {
		clearDeduplicationStore(); // n8n's store belongs to the n8n instance the emulator's account is used from
		await current!.control.reset();
	});
	return new Proxy({} as Emulator, {
		get(_target, key) {
			if (!current)
				throw new Error('The emulator starts in beforeAll; use it inside tests and hooks');
			return Reflect.get(current, key);
		},
	});
}
