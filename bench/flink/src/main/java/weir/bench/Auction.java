// SPDX-License-Identifier: Apache-2.0
package weir.bench;

/** A Nexmark auction. */
public class Auction {
  public long id;
  public String itemName;
  public String description;
  public long initialBid;
  public long reserve;
  public long dateTime;
  public long expires;
  public long seller;
  public long category;
  public String extra;

  public Auction() {}
}
