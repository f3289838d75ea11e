// SPDX-License-Identifier: Apache-2.0
package weir.bench;

/** A Nexmark bid (a Flink POJO). */
public class Bid {
  public long auction;
  public long bidder;
  public long price;
  public String channel;
  public String url;
  public long dateTime;
  public String extra;

  public Bid() {}
}
