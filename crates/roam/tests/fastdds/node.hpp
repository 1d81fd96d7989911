// What node.cpp (topics, services, the command line) and action.cpp (actions) of
// roam_fastdds_node share: output, options, the loopback participant, QoS and entities.
#pragma once

#include <atomic>
#include <string>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/publisher/qos/DataWriterQos.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/subscriber/qos/DataReaderQos.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>

namespace roam_node {

using namespace eprosima::fastdds::dds;

/// Set by SIGTERM/SIGINT: every mode returns soon after.
extern std::atomic<bool> g_stop;

/// One line on stdout (what tests read), flushed.
void out(const std::string& line);
/// One line on stderr (diagnostics), flushed.
void err(const std::string& line);

struct Args
{
    std::string mode;
    int domain = 0;
    std::string topic;
    std::string service = "add_two_ints";
    std::string type = "string";
    std::string text = "fast";
    bool transient_local = false;
    int depth = -1;
    long count = 0;
    double rate = 20;
    size_t size = 0;
    int wait_match = 0;
    int keys = 8;
    int updates = 5;
    bool summary = false;
    long calls = 1;
    long long a = 1;
    long long b = 2;
    double timeout = 10;
    bool legacy = false;
    std::string start_when;
    // actions
    std::string name = "/fibonacci";
    long step_ms = 100;
    long order = 10;
    long cancel_after = -1;
};

[[noreturn]] void usage(const char* why);

/// A participant that only talks UDPv4 on 127.0.0.1 (see the head of node.cpp).
DomainParticipant* loopback_participant(int domain, const std::string& name);

/// Reliable, `a.depth` deep, volatile or transient-local (`a.transient_local`), as
/// rmw_fastrtps sets up its endpoints.
DataWriterQos writer_qos(const Args& a);
DataReaderQos reader_qos(const Args& a);

std::string to_string(const eprosima::fastrtps::rtps::GUID_t& g);
std::string to_string(const eprosima::fastrtps::rtps::SampleIdentity& id);

/// Where the reply to the request `info` describes goes, as an rmw_fastrtps service answers:
/// the request's sequence number, and the client's reply reader when the request names it
/// (Humble on), else the request's writer.
eprosima::fastrtps::rtps::SampleIdentity reply_identity(const SampleInfo& info);

void sleep_until_stopped();

/// Logs matches on stderr (so tests can wait for them) and counts them.
struct WriterLog : public DataWriterListener
{
    std::string label = "writer";
    std::atomic<int> matched{0};
    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& s) override
    {
        matched = s.current_count;
        err(label + " matched " + std::to_string(s.current_count));
    }
};

/// The same for readers.
struct ReaderLog : public DataReaderListener
{
    std::string label = "reader";
    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override
    {
        err(label + " matched " + std::to_string(s.current_count));
    }
};

/// A participant with one publisher and one subscriber, all deleted on destruction.
struct Entities
{
    DomainParticipant* participant = nullptr;
    Publisher* publisher = nullptr;
    Subscriber* subscriber = nullptr;

    ~Entities()
    {
        if (participant != nullptr)
        {
            participant->delete_contained_entities();
            DomainParticipantFactory::get_instance()->delete_participant(participant);
        }
    }
};

/// Registers `t` (taking it) and creates the topic `name` of that type; exits on failure.
Topic* make_topic(DomainParticipant* p, const std::string& name, TopicDataType* t);

/// The action modes (action.cpp).
int action_server(const Args& a);
int action_client(const Args& a);

} // namespace roam_node
