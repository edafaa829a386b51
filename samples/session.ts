/**
 * Send to sessions and receive one session at a time: a named session with acceptSession,
 * then the next available one with acceptNextSession. Needs a queue with sessions enabled.
 */
import { ServiceBusClient, type ServiceBusMessage } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

const scientists: ServiceBusMessage[] = [
  { body: "Einstein", sessionId: "physics" },
  { body: "Curie", sessionId: "chemistry" },
  { body: "Heisenberg", sessionId: "physics" },
  { body: "Pauling", sessionId: "chemistry" },
  { body: "Bohr", sessionId: "physics" },
];

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  await sbClient.createSender(queueName).sendMessages(scientists);

  // A named session: everything in it, in the order it was sent.
  const physics = await sbClient.acceptSession(queueName, "physics");
  const got = await physics.receiveMessages(10, { maxWaitTimeInMs: 5000 });
  for (const message of got) await physics.completeMessage(message);
  console.log(`Session ${physics.sessionId}: ${got.map((m) => m.body).join(", ")}`);
  await physics.close();

  // Whichever session has messages next.
  const next = await sbClient.acceptNextSession(queueName, { maxAutoLockRenewalDurationInMs: 60_000 });
  const rest = await next.receiveMessages(10, { maxWaitTimeInMs: 5000 });
  for (const message of rest) await next.completeMessage(message);
  console.log(`Session ${next.sessionId}: ${rest.map((m) => m.body).join(", ")}`);
  await next.close();
  await sbClient.close();

  if (got.map((m) => m.body).join() !== "Einstein,Heisenberg,Bohr") throw new Error("physics arrived out of order");
  if (next.sessionId !== "chemistry" || rest.map((m) => m.body).join() !== "Curie,Pauling") throw new Error("chemistry went wrong");
}

main().catch((err) => {
  console.log("session Sample: Error occurred: ", err);
  process.exit(1);
});
