#!/usr/bin/perl
# An SMSC for tests that nobody here wrote the protocol side of: Debian's Net::SMPP (libnet-smpp-perl) reads and
# writes every PDU; this script only decides what to answer (docs/providers.md §8.5). Driven by
# test/fakes/net-smpp-smsc.ts: commands arrive as JSON lines on stdin, and every PDU this SMSC reads is reported as
# a JSON line on stdout, its octet fields and TLVs in hex exactly as Net::SMPP decoded them.
#
# Commands: {"cmd":"answer","statuses":[...]} queues the command_status of the next submit_sm answers (0 gives a
# message id; "nack:N" answers generic_nack with command_status N instead); {"cmd":"deliver", ...fields} sends a
# deliver_sm (fields by Net::SMPP's names; "tlv" names optional parameters as hex); {"cmd":"unbind"},
# {"cmd":"enquire_link"}, {"cmd":"drop"} (close the connection without a word).
use strict;
use warnings;
use IO::Select;
use JSON::PP;
use Net::SMPP;

my ($system_id, $password) = @ARGV;
my $json = JSON::PP->new->canonical;
$| = 1;

my $listen = Net::SMPP->new_listen('127.0.0.1', port => 0, smpp_version => 0x34, timeout => 5)
  or die "cannot listen: $!";
print $json->encode({ event => 'listening', port => $listen->sockport }), "\n";

my @answers;       # queued command_status values for the next submit_sm
my $next_id = 1000;
my $conn;
my $stdin_buf = '';
my $select = IO::Select->new(\*STDIN, $listen);

sub emit { print $json->encode({@_}), "\n" }

sub hexes { my ($v) = @_; return defined $v ? unpack('H*', $v) : undef }

sub report_pdu {
  my ($pdu) = @_;
  my %out = (event => 'pdu', command_id => sprintf('0x%08x', $pdu->{cmd}), status => $pdu->{status}, seq => $pdu->{seq});
  my $name = Net::SMPP::pdu_tab->{$pdu->{cmd}} ? Net::SMPP::pdu_tab->{$pdu->{cmd}}{cmd} : 'unknown';
  $out{name} = $name;
  for my $k (qw(system_id password system_type interface_version service_type source_addr_ton source_addr_npi source_addr
                dest_addr_ton dest_addr_npi destination_addr esm_class protocol_id priority_flag registered_delivery
                data_coding message_id)) {
    $out{$k} = $pdu->{$k} if defined $pdu->{$k};
  }
  $out{short_message} = hexes($pdu->{short_message}) if defined $pdu->{short_message};
  # Optional parameters: Net::SMPP keeps each under its numeric tag (and its name when it knows the tag).
  my %tlv;
  for my $k (keys %$pdu) { $tlv{sprintf('0x%04x', $k)} = hexes($pdu->{$k}) if $k =~ /^\d+$/ }
  $out{tlv} = \%tlv;
  emit(%out);
}

sub handle_pdu {
  my ($pdu) = @_;
  report_pdu($pdu);
  my $cmd = $pdu->{cmd};
  if ($cmd == 0x00000009) {    # bind_transceiver
    my $ok = ($pdu->{system_id} // '') eq $system_id && ($pdu->{password} // '') eq $password;
    $conn->bind_transceiver_resp(system_id => 'NETSMPP', seq => $pdu->{seq}, status => $ok ? 0 : 0x0E);
  } elsif ($cmd == 0x00000004) {    # submit_sm
    my $answer = @answers ? shift @answers : 0;
    if ($answer =~ /^nack:(\d+)$/) {
      $conn->generic_nack(seq => $pdu->{seq}, status => $1);
    } elsif ($answer == 0) {
      my $id = sprintf('%x', $next_id++);
      $conn->submit_sm_resp(message_id => $id, seq => $pdu->{seq});
      emit(event => 'accepted', seq => $pdu->{seq}, message_id => $id);
    } else {
      $conn->submit_sm_resp(message_id => '', seq => $pdu->{seq}, status => $answer);
    }
  } elsif ($cmd == 0x00000015) {    # enquire_link
    $conn->enquire_link_resp(seq => $pdu->{seq});
  } elsif ($cmd == 0x00000006) {    # unbind from the ESME
    $conn->unbind_resp(seq => $pdu->{seq});
    drop();
  } elsif ($cmd == 0x80000006) {    # unbind_resp to our unbind
    drop();
  }
}

sub drop {
  return unless $conn;
  $select->remove($conn);
  $conn->close;
  undef $conn;
  emit(event => 'closed');
}

sub command {
  my ($c) = @_;
  if ($c->{cmd} eq 'answer') {
    push @answers, @{ $c->{statuses} };
  } elsif ($c->{cmd} eq 'deliver') {
    return emit(event => 'error', error => 'no connection') unless $conn;
    my %tlv = %{ delete $c->{tlv} // {} };
    my @opt = map { ($_ => pack('H*', $tlv{$_})) } sort keys %tlv;
    my $text = pack('H*', delete $c->{short_message_hex} // '');
    delete $c->{cmd};
    my $seq = $conn->deliver_sm(%$c, short_message => $text, @opt, async => 1);
    emit(event => 'sent', name => 'deliver_sm', seq => $seq);
  } elsif ($c->{cmd} eq 'unbind') {
    return unless $conn;
    my $seq = $conn->unbind(async => 1);
    emit(event => 'sent', name => 'unbind', seq => $seq);
  } elsif ($c->{cmd} eq 'enquire_link') {
    return unless $conn;
    my $seq = $conn->enquire_link(async => 1);
    emit(event => 'sent', name => 'enquire_link', seq => $seq);
  } elsif ($c->{cmd} eq 'drop') {
    drop();
  } elsif ($c->{cmd} eq 'quit') {
    exit 0;
  }
}

while (1) {
  for my $fh ($select->can_read) {
    if ($fh == \*STDIN) {
      my $n = sysread(STDIN, $stdin_buf, 65536, length $stdin_buf);
      exit 0 unless $n;
      while ($stdin_buf =~ s/^([^\n]*)\n//) { command($json->decode($1)) if length $1 }
    } elsif ($fh == $listen) {
      my $c = $listen->accept or next;
      if ($conn) { $c->close; next }    # one ESME at a time
      # accept() gives a plain handle of the listener's class: take on the listener's protocol settings.
      ${*$c}{$_} = ${*$listen}{$_} for keys %{ Net::SMPP::Default() };
      ${*$c}{seq} = 0;
      $conn = $c;
      $select->add($conn);
      emit(event => 'connected');
    } else {
      my $pdu = $conn->read_pdu;
      if (!$pdu) { drop(); next }
      handle_pdu($pdu);
    }
  }
}
