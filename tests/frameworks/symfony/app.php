<?php
// A Symfony Messenger 5.4 application as a PHP team sets one up, from Debian's packages (no
// Composer): an AMQP transport "async" with retries through Symfony's delay queues, and a
// failure transport "failed" that the console drains. tests/frameworks/test_symfony.py runs it.
//
//   php app.php send VHOST COUNT SERIALIZER     dispatch COUNT SubmitInvoice messages
//   php app.php work VHOST SERIALIZER STATE SECONDS
//                                               consume "async" for SECONDS; the handler fails
//                                               until the file STATE/fixed exists, and writes
//                                               each invoice it handled to STATE/handled
// SERIALIZER is "json" (Symfony's Serializer: stamps in X-Message-Stamp-* headers) or "php"
// (PhpSerializer: the whole envelope, stamps included, serialized in the body).

namespace App\Message {
    class SubmitInvoice
    {
        public $invoiceId;
        public $amount;

        public function __construct(string $invoiceId = '', int $amount = 0)
        {
            $this->invoiceId = $invoiceId;
            $this->amount = $amount;
        }
    }
}

namespace App {
    require '/usr/share/php/Psr/Container/autoload.php';
    require '/usr/share/php/Psr/Log/autoload.php';
    require '/usr/share/php/Symfony/Component/EventDispatcher/autoload.php';
    require '/usr/share/php/Symfony/Component/Serializer/autoload.php';
    require '/usr/share/php/Symfony/Component/PropertyAccess/autoload.php';
    require '/usr/share/php/Symfony/Component/Messenger/autoload.php';
    require '/usr/share/php/Symfony/Component/Messenger/Bridge/Amqp/autoload.php';

    use App\Message\SubmitInvoice;
    use Psr\Container\ContainerInterface;
    use Symfony\Component\EventDispatcher\EventDispatcher;
    use Symfony\Component\Messenger\Bridge\Amqp\Transport\AmqpTransport;
    use Symfony\Component\Messenger\Bridge\Amqp\Transport\Connection;
    use Symfony\Component\Messenger\EventListener\AddErrorDetailsStampListener;
    use Symfony\Component\Messenger\EventListener\SendFailedMessageForRetryListener;
    use Symfony\Component\Messenger\EventListener\SendFailedMessageToFailureTransportListener;
    use Symfony\Component\Messenger\EventListener\StopWorkerOnTimeLimitListener;
    use Symfony\Component\Messenger\Handler\HandlersLocator;
    use Symfony\Component\Messenger\MessageBus;
    use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
    use Symfony\Component\Messenger\Middleware\SendMessageMiddleware;
    use Symfony\Component\Messenger\Retry\MultiplierRetryStrategy;
    use Symfony\Component\Messenger\Transport\Sender\SendersLocator;
    use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
    use Symfony\Component\Messenger\Transport\Serialization\Serializer;
    use Symfony\Component\Messenger\Worker;
    use Symfony\Component\Serializer\Encoder\JsonEncoder;
    use Symfony\Component\Serializer\Normalizer\ArrayDenormalizer;
    use Symfony\Component\Serializer\Normalizer\DateTimeNormalizer;
    use Symfony\Component\Serializer\Normalizer\ObjectNormalizer;
    use Symfony\Component\Serializer\Serializer as SymfonySerializer;

    final class Services implements ContainerInterface
    {
        private $services;

        public function __construct(array $services)
        {
            $this->services = $services;
        }

        public function get(string $id)
        {
            return $this->services[$id];
        }

        public function has(string $id): bool
        {
            return isset($this->services[$id]);
        }
    }

    function transport(string $vhost, string $name, string $serializer): AmqpTransport
    {
        $dsn = 'amqp://guest:guest@127.0.0.1:' . (getenv('AMQP_PORT') ?: '5672') . '/'
            . rawurlencode($vhost) . '/' . $name;
        $connection = Connection::fromDsn($dsn, [
            'exchange' => ['name' => $name, 'type' => 'fanout'],
            'queues' => [$name => []],
            'delay' => ['exchange_name' => 'delays'],
        ]);
        $format = 'php' === $serializer ? new PhpSerializer() : new Serializer(new SymfonySerializer(
            [new DateTimeNormalizer(), new ArrayDenormalizer(), new ObjectNormalizer()],
            [new JsonEncoder()]
        )); // Serializer::create() without its XML encoder (php-xml)

        return new AmqpTransport($connection, $format);
    }

    function send(string $vhost, int $count, string $serializer): void
    {
        $async = transport($vhost, 'async', $serializer);
        $senders = new SendersLocator(
            [SubmitInvoice::class => ['async']],
            new Services(['async' => $async])
        );
        $bus = new MessageBus([new SendMessageMiddleware($senders)]);
        for ($i = 1; $i <= $count; ++$i) {
            $bus->dispatch(new SubmitInvoice(sprintf('INV-%04d', $i), 100 * $i));
        }
    }

    function work(string $vhost, string $serializer, string $state, int $seconds): void
    {
        $async = transport($vhost, 'async', $serializer);
        $failed = transport($vhost, 'failed', $serializer);
        $failed->setup(); // the failure transport's queue exists before anything fails
        $handler = function (SubmitInvoice $invoice) use ($state) {
            if (!file_exists($state . '/fixed')) {
                throw new \RuntimeException(sprintf('ledger unavailable for %s', $invoice->invoiceId));
            }
            file_put_contents($state . '/handled', $invoice->invoiceId . "\n", FILE_APPEND | LOCK_EX);
        };
        $bus = new MessageBus([
            new HandleMessageMiddleware(new HandlersLocator([SubmitInvoice::class => [$handler]])),
        ]);
        $dispatcher = new EventDispatcher();
        $dispatcher->addSubscriber(new AddErrorDetailsStampListener());
        $dispatcher->addSubscriber(new SendFailedMessageForRetryListener(
            new Services(['async' => $async]),
            new Services(['async' => new MultiplierRetryStrategy(2, 200, 2)])
        ));
        $dispatcher->addSubscriber(
            new SendFailedMessageToFailureTransportListener(new Services(['async' => $failed]))
        );
        $dispatcher->addSubscriber(new StopWorkerOnTimeLimitListener($seconds));
        $worker = new Worker(['async' => $async], $bus, $dispatcher);
        $worker->run(['sleep' => 50000]);
    }

    $args = $argv;
    switch ($args[1] ?? '') {
        case 'send':
            send($args[2], (int) $args[3], $args[4]);
            break;
        case 'work':
            work($args[2], $args[3], $args[4], (int) $args[5]);
            break;
        default:
            fwrite(STDERR, "usage: php app.php send VHOST COUNT SERIALIZER | work VHOST SERIALIZER STATE SECONDS\n");
            exit(2);
    }
}
