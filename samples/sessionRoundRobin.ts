/**
 * Process every session of a queue round-robin, a few at a time: the Service Bus SDK 7.x has
 * no session processor, so the program accepts the next available session in a loop,
 * subscribes to it, and closes it once it has been idle for a while (closing releases it, so
 * new messages for it are picked up by a later acceptNextSession). ServiceTimeout from
 * acceptNextSession only means no session had messages within the wait.
 */
import { delay, isServiceBusError, ServiceBusClient, type ProcessErrorArgs, type ServiceBusReceivedMessage, type ServiceBusSessionReceiver } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";
const maxSessionsInParallel = 3;
const sessionIdleTimeoutMs = 1000;
const sessions = ["red", "green", "blue", "cyan", "magenta"];
const perSession = 4;

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  // acceptNextSession waits up to the retry timeout for a session: a short one keeps the loop turning.
  const sessionClient = new ServiceBusClient(connectionString, { retryOptions: { timeoutInMs: 5000 } });
  await sbClient.createSender(queueName).sendMessages(
    sessions.flatMap((sessionId) => Array.from({ length: perSession }, (_, n) => ({ body: { sessionId, n }, sessionId }))),
  );

  const seen = new Map<string, number[]>();
  const abort = new AbortController();

  async function receiveFromNextSession(): Promise<void> {
    let receiver: ServiceBusSessionReceiver;
    try {
      receiver = await sessionClient.acceptNextSession(queueName, { maxAutoLockRenewalDurationInMs: 60_000 });
    } catch (err) {
      if (isServiceBusError(err) && (err.code === "ServiceTimeout" || err.code === "SessionCannotBeLocked")) return; // nothing to take right now
      throw err;
    }
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    let release!: () => void;
    const idle = new Promise<void>((resolve) => (release = resolve));
    const resetIdle = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(release, sessionIdleTimeoutMs);
    };
    resetIdle();
    const subscription = receiver.subscribe(
      {
        async processMessage(message: ServiceBusReceivedMessage) {
          resetIdle();
          const list = seen.get(receiver.sessionId) ?? [];
          list.push(message.body.n);
          seen.set(receiver.sessionId, list);
        },
        async processError(args: ProcessErrorArgs) {
          console.log(`Error from ${args.errorSource} on session ${receiver.sessionId}: `, args.error);
          release();
        },
      },
      { autoCompleteMessages: true },
    );
    await idle;
    clearTimeout(idleTimer);
    await subscription.close();
    await receiver.close();
    console.log(`Session ${receiver.sessionId}: ${seen.get(receiver.sessionId)?.join(", ") ?? "nothing"}`);
  }

  async function worker(): Promise<void> {
    while (!abort.signal.aborted) {
      await receiveFromNextSession();
      await delay(10);
    }
  }

  const workers = Array.from({ length: maxSessionsInParallel }, () => worker());
  const done = () => sessions.every((s) => seen.get(s)?.length === perSession);
  for (let i = 0; i < 600 && !done(); i++) await delay(100);
  abort.abort();
  await Promise.all(workers);
  await sessionClient.close();
  await sbClient.close();

  for (const s of sessions) {
    if (seen.get(s)?.join() !== "0,1,2,3") throw new Error(`session ${s} processed ${JSON.stringify(seen.get(s))}`);
  }
}

main().catch((err) => {
  console.log("sessionRoundRobin Sample: Error occurred: ", err);
  process.exit(1);
});
